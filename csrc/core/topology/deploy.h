/* Deployments: how one client reaches its Redis, as the lock kinds are (kind.h): one table of
 * operations per deployment, one file each.
 *
 *   deploy_standalone.c  redis://, rediss://, unix://: one server
 *   deploy_sentinel.c    redis+sentinel://: the master the sentinels name, through failovers
 *   deploy_cluster.c     redis+cluster://: each key at the node serving its slot
 *
 * rl_client_new chooses the table once, from the URL's scheme (the only place that asks which
 * deployment a client has), and keeps it in c->deploy with its state in c->deploy_state. The
 * rest of the core calls these operations and never asks which deployment answers; the
 * connection layer (conn.c) knows only the resolver a deployment hands it (rl_resolver, conn.h).
 *
 * Every operation is set (a deployment with nothing to do has a no-op). Unless said otherwise,
 * an operation is called on the thread of a call of the client (a caller's, an async worker's)
 * with a reference on the client, holds no lock of the core, and may do network I/O within the
 * command timeout. */
#ifndef RL_DEPLOY_H
#define RL_DEPLOY_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "holds.h"
#include "pool.h"
#include "redirect.h"
#include "subscriber.h"

struct rl_client;

/* A call on the pool of the server chosen for it (client.c's script and command calls): sends
 * ASKING first when `asking` (a cluster's ASK), copies the connection's redirect (MOVED, ASK,
 * TRYAGAIN, CLUSTERDOWN) into *redirect, and sets *repeatable when the call may be made again
 * elsewhere (idempotent, or never sent). */
typedef rl_status (*rl_deploy_run)(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                                   int *repeatable, rl_error *err);

/* What a renewal round did, for the watchdog's statistics. */
typedef struct rl_renew_outcome {
    uint64_t round_trips; /* network round trips of the round */
    uint64_t calls;       /* script calls */
    size_t nodes;         /* servers the round went to */
    size_t failed_nodes;  /* servers that could not be reached */
} rl_renew_outcome;

typedef struct rl_deploy {
    const char *name;   /* "standalone", "sentinel", "cluster" */
    const char *numsub; /* PUBSUB's subcommand that counts a channel's subscribers (inspect.c) */

    /* ---- life ---------------------------------------------------------------------------- */

    /* In rl_client_new, on its thread, after c->cfg is filled (endpoint, options, TLS) and
     * before the pool is made: makes c->deploy_state and hands the connection layer its
     * resolver (c->cfg.resolver), if any. Asks nothing of the network. When it fails, destroy
     * follows. */
    rl_status (*create)(struct rl_client *c, rl_error *err);
    /* In rl_client_free, once, on the closing thread, right after cfg.closing is set and before
     * the client's own pool, subscriber, workers and watchdog stop: cuts short everything the
     * deployment owns (joins its threads, ends its asks, closes its pools and subscribers), so
     * that it calls nothing of the client back afterwards. */
    void (*stop)(struct rl_client *c);
    /* When the client's last reference goes (or create failed: the state may then be NULL):
     * frees the state. No other thread uses the client any more. */
    void (*destroy)(struct rl_client *c);

    /* ---- fork (fork.c's pthread_atfork handlers, through rl_client_*_fork) --------------- */

    /* Before fork(), on the forking thread: takes the deployment's mutexes. The client's lock
     * order puts them after c->mu, events.mu and the client's pool, scripts and subscriber
     * mutexes (a connection asks the resolver with a pool's mutex held), and before workers.mu
     * and cfg.fd_mu (a cluster node's subscriber schedules jobs under its mutex; sockets change
     * under fd_mu), which the client takes after it. fork_unlock lets them go (in the parent,
     * and in the child after after_fork_child). */
    void (*fork_lock)(struct rl_client *c);
    void (*fork_unlock)(struct rl_client *c);
    /* In the child, at fork, single-threaded, with fork_lock's mutexes still held: starts afresh
     * the condition variables and mutexes a parent's thread may have been using. */
    void (*after_fork_child)(struct rl_client *c);
    /* In the child, at its first call of the client (c->mu held): forgets the parent's threads
     * and connections without a word to Redis (rl_conn_abandon). */
    void (*forget_after_fork)(struct rl_client *c);

    /* ---- routing calls ------------------------------------------------------------------- */

    /* Runs `run` (with arg) at the server of cmd's key argv[first_key] (any server when the
     * command has none), following the deployment's redirects within the command timeout.
     * Every rl_publish_command among the key and the arguments becomes the deployment's publish
     * command (a cluster's sharded SPUBLISH). */
    rl_status (*call)(struct rl_client *c, const rl_cmd *cmd, int first_key, rl_deploy_run run,
                      void *arg, rl_error *err);
    /* n read-only commands, each at the server of its key (argv[1]; PUBSUB's channel, argv[2]),
     * pipelined: one round trip per server. Error replies come back as replies; replies[] is
     * all set on RL_OK. */
    rl_status (*commands)(struct rl_client *c, size_t n, const rl_cmd *cmds, redisReply **replies,
                          rl_error *err);
    /* One SCAN page: cmd is SCAN <cursor> ... for `cursor` (argv[1] may be rewritten: a cluster
     * walks its masters with a cursor of its own); *next: the cursor that follows, 0 at the end,
     * set when *reply is a well-formed page. */
    rl_status (*scan)(struct rl_client *c, uint64_t cursor, rl_cmd *cmd, redisReply **reply,
                      uint64_t *next, rl_error *err);
    /* Refuses a lock or family name the deployment cannot serve (a cluster: keys that would not
     * share a slot); `what` names it in the message. No I/O. */
    rl_status (*check_name)(const void *name, size_t len, const char *what, rl_error *err);

    /* ---- pub/sub (waiting.c) ------------------------------------------------------------- */

    /* The subscriber that hears `channel` (a cluster: the node serving its slot, the map asked
     * when needed); NULL with *err filled (err may be NULL) when none can be had. */
    rl_subscriber *(*subscriber)(struct rl_client *c, const char *channel, size_t len,
                                 rl_error *err);
    /* A subscription to `channel` ended because it moved (a cluster's slot migrated): learn
     * where it went before it is joined again. */
    void (*channel_moved)(struct rl_client *c, const char *channel, size_t len);
    /* Channels subscribed now, over every subscriber. Any thread (statistics). */
    size_t (*subscriptions)(struct rl_client *c);

    /* ---- background work ----------------------------------------------------------------- */

    /* On the workers' thread (deferred.c's timer), no lock held: the deployment's own pools
     * beyond c->pool (a cluster's nodes') send the commands they deferred once idle for
     * idle_ms. Returns when the next is due (monotonic ms), 0 when none waits. */
    int64_t (*send_deferred)(struct rl_client *c, int64_t idle_ms, int64_t timeout_ms);
    /* On the watchdog's thread, client mutex NOT held (the holds of batch stay valid: each is
     * marked in_round): renews batch[0..n) for `lease` ms within timeout_ms. answers[i]: the
     * renewal script's answer for batch[i] (1 renewed, 0 gone, 2 held by others) or -1 when
     * none came; servers[i]: the identity (identity.h) of the server that gave answers[i], 0
     * when not known. RL_OK when every server answered; else the first failure, in *err. */
    rl_status (*renew)(struct rl_client *c, rl_hold **batch, size_t n, int64_t lease,
                       int64_t timeout_ms, long long *answers, uint32_t *servers,
                       rl_renew_outcome *out, rl_error *err);
    /* On the watchdog's thread, client mutex NOT held, every failover_grace / 2 (at least
     * 100 ms) while the client has holds to renew, `deadline` a period away: learns by then of
     * topology changes no call has met (a cluster asks a node for its map), so that a holder
     * that makes no call is told of a failover within the failover grace. NULL: the deployment
     * is told without asking. */
    void (*check_topology)(struct rl_client *c, int64_t deadline);
    /* Any thread (rl_client_stats): adds the deployment's own counters to *out. */
    void (*stats)(struct rl_client *c, rl_stats *out);
} rl_deploy;

extern const rl_deploy rl_deploy_standalone, rl_deploy_sentinel, rl_deploy_cluster;

/* Standalone's operations, which a deployment of one server at a time (Sentinel) shares: the
 * client's pool, subscriber and watchdog connection serve every call. */
rl_status rl_standalone_call(struct rl_client *c, const rl_cmd *cmd, int first_key,
                             rl_deploy_run run, void *arg, rl_error *err);
rl_status rl_standalone_commands(struct rl_client *c, size_t n, const rl_cmd *cmds,
                                 redisReply **replies, rl_error *err);
rl_status rl_standalone_scan(struct rl_client *c, uint64_t cursor, rl_cmd *cmd, redisReply **reply,
                             uint64_t *next, rl_error *err);
rl_status rl_standalone_check_name(const void *name, size_t len, const char *what, rl_error *err);
rl_subscriber *rl_standalone_subscriber(struct rl_client *c, const char *channel, size_t len,
                                        rl_error *err);
void rl_standalone_channel_moved(struct rl_client *c, const char *channel, size_t len);
size_t rl_standalone_subscriptions(struct rl_client *c);
int64_t rl_standalone_send_deferred(struct rl_client *c, int64_t idle_ms, int64_t timeout_ms);
rl_status rl_standalone_renew(struct rl_client *c, rl_hold **batch, size_t n, int64_t lease,
                              int64_t timeout_ms, long long *answers, uint32_t *servers,
                              rl_renew_outcome *out, rl_error *err);
void rl_standalone_after_fork_child(struct rl_client *c);
void rl_standalone_stats(struct rl_client *c, rl_stats *out);

#endif
