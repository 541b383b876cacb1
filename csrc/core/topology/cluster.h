/* Redis Cluster (redis+cluster:// URLs): which node serves each slot, and that node's connections.
 *
 * The slot map comes from CLUSTER SLOTS, asked of the seed nodes (then of every node known) when
 * a slot's owner is first needed, when a node answers MOVED, and when a node cannot be reached
 * (a failover may have promoted its replica). Refreshes are serialized and rate-limited: when
 * many calls see MOVED at once, one refresh serves them all. A MOVED answer also sets its slot's
 * owner at once. Each node, known once, lives until the client is freed: its small pool of
 * command connections (opened on demand), its sharded pub/sub subscriber and the watchdog's
 * connection to it. */
#ifndef RL_CLUSTER_H
#define RL_CLUSTER_H

#include <pthread.h>
#include <stdint.h>

#include "conn.h"
#include "pool.h"
#include "slots.h"
#include "subscriber.h"

typedef struct rl_cluster_node {
    struct rl_cluster_node *next;
    char host[256];
    int port;
    rl_pool pool;      /* command connections, opened as concurrent calls need them */
    rl_subscriber sub; /* SSUBSCRIBE to the channels of its slots */
    rl_conn renew;     /* the watchdog's */
    int64_t failed_at; /* rl_now_ms() when it was last found unreachable (0: never, or it has
                          answered the map since): asked for the map after the others */
} rl_cluster_node;

typedef struct rl_cluster rl_cluster;

/* Called when slots changed owner (a MOVED answer, a refreshed map: a reshard or a failover), with
 * a bitmap of them (RL_SLOTS bits); on the thread that learned it, no cluster mutex held. */
typedef void (*rl_cluster_moved_fn)(void *userdata, const uint64_t *slots);

/* For cfg's seed nodes (cfg->endpoint). Asks nothing yet. */
rl_status rl_cluster_new(rl_config *cfg, rl_cluster **out, rl_error *err);
/* Closes every node's pool, stops its subscriber and cuts short the watchdog's exchanges. */
void rl_cluster_stop(rl_cluster *cl);
void rl_cluster_free(rl_cluster *cl);
/* Sets the callback for slots that changed owner; before the first call. */
void rl_cluster_on_moved(rl_cluster *cl, rl_cluster_moved_fn fn, void *userdata);

/* The node serving `slot`, asking for the map when it is not known (the first time, every seed
 * and node in turn, each with its full timeouts; later within connect_timeout + command_timeout
 * in all). NULL with *err filled when no node answers or no node serves the slot. */
rl_cluster_node *rl_cluster_owner(rl_cluster *cl, int slot, rl_error *err);
/* The node at host:port (ASK, MOVED), made when not known yet; NULL when out of memory. */
rl_cluster_node *rl_cluster_node_at(rl_cluster *cl, const char *host, int port);
/* A node answered MOVED: the slot is host:port's now; the rest of the map is asked again unless a
 * refresh ran a moment ago. */
void rl_cluster_moved(rl_cluster *cl, int slot, const char *host, int port);
/* A node of `slot` (`was`, or NULL) could not be reached: ask the map again (rate-limited), the
 * other nodes first, ending by `deadline` (rl_now_ms(); a wait for another thread's refresh
 * too). With no time left the map is only marked stale: rl_cluster_ask_if_stale asks it. 1 when
 * the slot's owner changed. */
int rl_cluster_unreachable(rl_cluster *cl, int slot, rl_cluster_node *was, int64_t deadline);
/* Asks the map again, by `deadline`, when a node was found unreachable with no time left to. */
void rl_cluster_ask_if_stale(rl_cluster *cl, int64_t deadline);

/* Asks one known node for the map, the next in turn after the one asked last, by `deadline`,
 * unless a refresh is under way or got an answer within `fresh_ms`: the map changes a node
 * knows of reach this client though none of its calls met them (a failover of a node it only
 * holds locks at). Changes are told as any refresh's are (rl_cluster_on_moved). */
void rl_cluster_poll(rl_cluster *cl, int64_t fresh_ms, int64_t deadline);

/* The masters that serve slots now (the map asked first if it never was), sorted by address so
 * that a walk over them (SCAN) keeps its order from call to call; *out: n of them, to free(). */
rl_status rl_cluster_masters(rl_cluster *cl, rl_cluster_node ***out, size_t *n, rl_error *err);

/* Every node known now (they are never removed): for walking with ->next. */
rl_cluster_node *rl_cluster_nodes(rl_cluster *cl);
uint64_t rl_cluster_refreshes(rl_cluster *cl);

/* fork(): the map's mutex and every node's pool and subscriber mutexes are held across (the
 * nodes known when it was taken: new ones are made under it). In the child, at fork:
 * after_fork_child starts every node's condition variables and the refresh mutex afresh (a
 * parent's thread may have waited on or held them), before the mutexes are let go; at the child's
 * first call, forget_after_fork drops every connection (the parent's). */
void rl_cluster_lock(rl_cluster *cl);
void rl_cluster_unlock(rl_cluster *cl);
void rl_cluster_after_fork_child(rl_cluster *cl);
void rl_cluster_forget_after_fork(rl_cluster *cl);

/* How calls follow the cluster: `run` runs the call on `pool` (sending ASKING first when `asking`)
 * and copies the connection's redirect (scripts.c parses it) into *redirect. MOVED and ASK are
 * followed, TRYAGAIN and CLUSTERDOWN retried with back-off, a node that cannot be reached is
 * replaced by the map's new owner when the call may be repeated; all within the command timeout,
 * then a clear error. A call ends within about connect_timeout + command_timeout, as on one
 * Redis: the map asked after a node was unreachable gets what is left of that, no more. */
typedef rl_status (*rl_cluster_run)(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                                    int *repeatable, rl_error *err);
rl_status rl_cluster_call(rl_cluster *cl, int slot, rl_cluster_run run, void *arg, rl_error *err);

#endif
