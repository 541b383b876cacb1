/* The client object shared by the core's modules: configuration, identity, the hold table and its
 * mutex, the connections, and the background threads. */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"
#include "deploy.h"
#include "events.h"
#include "holds.h"
#include "metrics.h"
#include "pool.h"
#include "redlease.h"
#include "scripts.h"
#include "subscriber.h"
#include "wake_grace.h"
#include "watchdog.h"
#include "workers.h"

struct rl_client {
    rl_config cfg;
    const rl_deploy *deploy; /* standalone, Sentinel or Cluster: chosen once by the URL */
    void *deploy_state;      /* the deployment's own (deploy.h) */
    char id[37];             /* UUID; replaced in a forked child */
    char *shown_url;         /* the URL without its password */
#define RL_CLIENT_STRINGS 8
    char *strings[RL_CLIENT_STRINGS]; /* copies of the options' strings */
    atomic_int refs;                  /* the owner's reference, each lock, each call in progress */
    atomic_int closed;
    _Atomic uint64_t fork_generation; /* rl_fork_generation() when `id` and the state were made */
    pthread_mutex_t mu;               /* guards holds and watchdog; never held during network I/O */
    rl_holds holds;
    rl_handovers handovers; /* guarded by mu */
    rl_watchdog watchdog;
    rl_pool pool;
    rl_scripts scripts;
    rl_subscriber sub;
    rl_events events;
    rl_metrics metrics;
    rl_workers workers;  /* the async calls' threads and timers, started by the first one */
    rl_job deferred_job; /* deferred.c's timer */
    atomic_int deferred_armed;
    atomic_int deferred_seen; /* a connection went idle with deferred commands since the look */
    int deferred_quiet;       /* looks in a row that found none (the timer's own) */
    _Atomic int64_t grants_paused_until; /* failover_grace.c: no new hold before (ms); 0 */
    struct rl_slot_grace *slot_grace;    /* Cluster: the grace per slot (failover_grace.c) */
    _Atomic uint64_t master_changes;     /* new masters followed (failovers, slots moved) */
    struct rl_client *registry_prev, *registry_next; /* fork.c's list of live clients */
};

/* Every public entry point brackets its work with these: enter takes a reference, fails on a
 * closed client, and gives a forked child a fresh identity and state. */
rl_status rl_client_enter(rl_client *c, rl_error *err);
void rl_client_leave(rl_client *c);
void rl_client_ref(rl_client *c);
void rl_client_unref(rl_client *c);
/* A reference for a visitor that holds none (fork.c's registry walk): 0, taking nothing, when the
 * count already reached zero (the client is being destroyed and must never come back). */
int rl_client_try_ref(rl_client *c);

/* "<uuid>:<context>" into out[RL_OWNER_MAX]; returns its length. */
size_t rl_client_owner(rl_client *c, uint64_t context, char *out);

/* Whether a script's answer means it wrote to Redis. */
typedef int (*rl_reply_test)(const redisReply *reply);

/* The identity (identity.h) of the server that answered the calling thread's last script call
 * through rl_client_script; 0 when it failed or the server's identity is not known. Read right
 * after an acquire, it tells the new hold which server it lives on before any renewal. */
uint32_t rl_client_answered_by(void);

/* Runs one call of a script on a pooled connection. argv/lens have RL_SCRIPT_ARGV_HEAD free
 * slots first. When `then_send` is set it is queued, after Redis answered, to go out with the
 * next exchange on the same connection (its reply is not waited for). When
 * `wrote` says the answer is a write, replica sync runs on the same connection (RL_ERR_REPLICA,
 * with *reply still set, when no connected replica acknowledged it; any other failure leaves no
 * reply). */
rl_status rl_client_script(rl_client *c, rl_script_id id, int argc, const char **argv, size_t *lens,
                           redisReply **reply, int idempotent, const rl_cmd *then_send,
                           rl_reply_test wrote, rl_error *err);

/* While `into` is set on the calling thread, rl_client_script sends nothing: it copies the call it
 * would make into into->cmd and into->pool (freed with rl_client_capture_free) and answers
 * RL_NOT_ACQUIRED with no reply. Only a call that goes as one EVALSHA of a loaded script on the
 * client's own pool with nothing after it is copied (into->cmd.argc stays 0 otherwise): a cluster
 * node's call, an ASK retry, a replica sync, a script not loaded yet go their usual way. */
void rl_client_capture(rl_sub_send *into);
void rl_client_capture_free(rl_sub_send *s);

/* Runs one plain read-only command on a pooled connection (at its first key's server). */
rl_status rl_client_command(rl_client *c, int argc, const char **argv, size_t *lens,
                            redisReply **reply, rl_error *err);

/* Runs n plain read-only commands pipelined: one round trip per server (each command at its
 * key's); error replies come back as replies. */
rl_status rl_client_commands(rl_client *c, size_t n, const rl_cmd *cmds, redisReply **replies,
                             rl_error *err);

/* Marks `hold` lost (client mutex held): stops its renewal and reports the loss as an event. */
void rl_client_hold_lost(rl_client *c, rl_hold *hold, rl_lost_reason reason);

/* rl_context_ended for this client only (contexts.c). */
void rl_client_context_ended(rl_client *c, uint64_t context);

/* fork.c's hooks, one per phase of fork(). */
void rl_client_before_fork(rl_client *c);
void rl_client_after_fork_parent(rl_client *c);
void rl_client_after_fork_child(rl_client *c);

#endif
