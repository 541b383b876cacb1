#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "deferred.h"
#include "error.h"
#include "fork.h"
#include "names.h"
#include "options.h"
#include "random.h"
#include "replicas.h"
#include "waiting.h"

const char rl_publish_command[] = "publish";

int rl_tls_supported(void) {
    return rl_tls_available();
}

static int uses_tls_options(const rl_options *o) {
    return o->tls_ca_file || o->tls_ca_dir || o->tls_cert_file || o->tls_key_file ||
           o->tls_server_name || o->tls_insecure_skip_verify;
}

/* The client's own copies of the option strings (the caller's may go away). */
static int copy_strings(rl_client *c, rl_options *o) {
    const char **fields[RL_CLIENT_STRINGS] = {
        &o->tls_ca_file,     &o->tls_ca_dir,    &o->tls_cert_file,     &o->tls_key_file,
        &o->tls_server_name, &o->sentinel_user, &o->sentinel_password, &o->client_name};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        if (!*fields[i]) continue;
        if (!(c->strings[i] = strdup(*fields[i]))) return -1;
        *fields[i] = c->strings[i];
    }
    return 0;
}

/* Frees a client whose making failed before its pool (everything else may be missing). */
static void discard(rl_client *c) {
    for (size_t i = 0; i < RL_CLIENT_STRINGS; i++)
        free(c->strings[i]);
    free(c->shown_url);
    if (c->deploy) c->deploy->destroy(c);
    rl_tls_context_free(c->cfg.tls);
    rl_endpoint_free(&c->cfg.endpoint);
    rl_config_destroy(&c->cfg);
    free(c);
}

/* The one place that knows the deployments: the one the URL's scheme names. */
static const rl_deploy *deployment_of(const rl_endpoint *ep) {
    if (ep->cluster) return &rl_deploy_cluster;
    if (ep->sentinels) return &rl_deploy_sentinel;
    return &rl_deploy_standalone;
}

rl_status rl_client_new(const char *url, const rl_options *options, rl_client **out,
                        rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    rl_options o;
    if (options)
        o = *options;
    else
        rl_options_init(&o);
    rl_status st = rl_options_check(&o, err);
    if (st != RL_OK) return st;
    rl_client *c = calloc(1, sizeof *c);
    if (!c) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_config_init(&c->cfg);
    c->cfg.options = o;    /* the cluster's nodes size their pools by it */
    rl_random_uuid(c->id); /* before any connection: each names itself with it */
    c->cfg.client_id = c->id;
    st = rl_endpoint_parse(url, &c->cfg.endpoint, err);
    if (st == RL_OK && uses_tls_options(&o) && !c->cfg.endpoint.tls)
        st = rl_fail(err, RL_ERR_ARGUMENT, "the tls_* options need a rediss:// URL");
    if (st == RL_OK && c->cfg.endpoint.tls)
        st = rl_tls_context_new(&o, c->cfg.endpoint.host, &c->cfg.tls, err);
    if (st == RL_OK) {
        c->deploy = deployment_of(&c->cfg.endpoint);
        st = c->deploy->create(c, err);
    }
    if (st == RL_OK && (!(c->shown_url = rl_url_redacted(url)) || copy_strings(c, &o) != 0 ||
                        rl_pool_init(&c->pool, o.pool_size, &c->cfg) != 0))
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    if (st != RL_OK) {
        discard(c);
        return st;
    }
    c->cfg.options = o;
    atomic_init(&c->refs, 1);
    atomic_init(&c->closed, 0);
    atomic_init(&c->fork_generation, rl_fork_generation());
    atomic_init(&c->grants_paused_until, 0);
    atomic_init(&c->master_changes, 0);
    pthread_mutex_init(&c->mu, NULL);
    rl_holds_init(&c->holds, c->id);
    rl_metrics_init(&c->metrics);
    rl_watchdog_init(&c->watchdog, &c->cfg);
    rl_scripts_init(&c->scripts);
    rl_sub_init(&c->sub, &c->cfg);
    rl_workers_init(&c->workers);
    rl_deferred_init(c);
    rl_events_init(&c->events, o.on_event, o.event_userdata, o.queue_events);
    rl_fork_register(c);
    *out = c;
    return RL_OK;
}

static void destroy(rl_client *c) {
    rl_fork_unregister(c);
    rl_holds_clear(&c->holds);
    rl_watchdog_destroy(&c->watchdog);
    rl_pool_destroy(&c->pool);
    rl_scripts_destroy(&c->scripts);
    rl_sub_destroy(&c->sub);
    rl_workers_destroy(&c->workers);
    rl_events_destroy(&c->events);
    rl_endpoint_free(&c->cfg.endpoint);
    c->deploy->destroy(c);
    rl_tls_context_free(c->cfg.tls);
    rl_config_destroy(&c->cfg);
    pthread_mutex_destroy(&c->mu);
    for (size_t i = 0; i < RL_CLIENT_STRINGS; i++)
        free(c->strings[i]);
    free(c->shown_url);
    free(c);
}

void rl_client_ref(rl_client *c) {
    atomic_fetch_add(&c->refs, 1);
}

int rl_client_try_ref(rl_client *c) {
    int refs = atomic_load(&c->refs);
    while (refs > 0)
        if (atomic_compare_exchange_weak(&c->refs, &refs, refs + 1)) return 1;
    return 0;
}

void rl_client_unref(rl_client *c) {
    if (atomic_fetch_sub(&c->refs, 1) == 1) destroy(c);
}

static void reset_after_fork(rl_client *c, uint64_t generation);

void rl_client_free(rl_client *c) {
    if (!c) return;
    /* In a forked child that never used the client since, the thread handles are the parent's
     * (and may name the child's own new threads): forget them before stopping anything. */
    uint64_t generation = rl_fork_generation();
    if (atomic_load(&c->fork_generation) != generation) reset_after_fork(c, generation);
    if (atomic_exchange(&c->closed, 1) == 0) {
        /* Promptly, whatever the network does: no connection opens any more, every call in
         * progress on a socket is cut short and every waiter is woken (they answer "closed"),
         * and only then are the threads joined. */
        atomic_store(&c->cfg.closing, 1);
        c->deploy->stop(c); /* its threads, asks and pools: nothing of it calls back */
        rl_pool_close(&c->pool);
        rl_pool_interrupt(&c->pool);
        rl_sub_stop(&c->sub); /* async waiters are told: they end on the workers */
        rl_workers_stop(&c->workers);
        rl_watchdog_stop(c);
        rl_events_stop(&c->events);
    }
    rl_client_unref(c);
}

/* A forked child's first call: everything it inherited belongs to the parent. It gets a new
 * identity (so it can never act as the parent's owner), forgets the parent's holds without
 * releasing or renewing them, and drops the parent's connections without a word to Redis. */
static void reset_after_fork(rl_client *c, uint64_t generation) {
    pthread_mutex_lock(&c->mu);
    if (atomic_load(&c->fork_generation) != generation) {
        rl_random_uuid(c->id);
        rl_holds_clear(&c->holds);
        rl_watchdog_forget_after_fork(&c->watchdog);
        pthread_mutex_lock(&c->pool.mu);
        rl_pool_forget_after_fork(&c->pool);
        pthread_mutex_unlock(&c->pool.mu);
        pthread_mutex_lock(&c->sub.mu);
        rl_sub_forget_after_fork(&c->sub);
        pthread_mutex_unlock(&c->sub.mu);
        pthread_mutex_lock(&c->events.mu);
        rl_events_forget_after_fork(&c->events);
        pthread_mutex_unlock(&c->events.mu);
        pthread_mutex_lock(&c->workers.mu);
        rl_workers_forget_after_fork(&c->workers);
        pthread_mutex_unlock(&c->workers.mu);
        atomic_store(&c->deferred_armed, 0); /* its timer was forgotten with the workers' */
        c->deferred_quiet = 0;
        c->deploy->forget_after_fork(c);
        atomic_store(&c->fork_generation, generation);
    }
    pthread_mutex_unlock(&c->mu);
}

rl_status rl_client_enter(rl_client *c, rl_error *err) {
    rl_error_clear(err);
    if (!c) return rl_fail(err, RL_ERR_ARGUMENT, "client must not be NULL");
    rl_client_ref(c);
    if (atomic_load(&c->closed)) {
        rl_client_unref(c);
        return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    }
    uint64_t generation = rl_fork_generation();
    if (atomic_load(&c->fork_generation) != generation) reset_after_fork(c, generation);
    return RL_OK;
}

void rl_client_leave(rl_client *c) {
    rl_client_unref(c);
}

void rl_client_options(rl_client *c, rl_options *out) {
    if (c)
        *out = c->cfg.options;
    else
        rl_options_init(out);
}

const char *rl_client_url(rl_client *c) {
    return c ? c->shown_url : "";
}

const char *rl_client_id(rl_client *c) {
    if (rl_client_enter(c, NULL) == RL_OK) rl_client_leave(c);
    return c ? c->id : "";
}

size_t rl_client_take_events(rl_client *c, rl_event_fn fn, void *userdata) {
    if (!c || !fn) return 0;
    /* The host hears what the clock tells of its holds now, though the watchdog be stuck in a
     * round (a host without an event thread takes its events only between its calls). Out of
     * a round the watchdog decides in time itself, and the walk over the holds is saved. */
    if (atomic_load(&c->watchdog.in_io)) {
        pthread_mutex_lock(&c->mu);
        if (c->holds.watched) rl_watchdog_settle(c);
        pthread_mutex_unlock(&c->mu);
    }
    return rl_events_take(&c->events, fn, userdata);
}

size_t rl_client_owner(rl_client *c, uint64_t context, char *out) {
    int n = snprintf(out, RL_OWNER_MAX, "%s:%llu", c->id, (unsigned long long)context);
    return (size_t)n;
}

void rl_client_hold_lost(rl_client *c, rl_hold *h, rl_lost_reason reason) {
    if (h->lost) return;
    h->lost = reason;
    if (h->in_doubt) { /* lost settles the doubt */
        h->in_doubt = 0;
        c->holds.in_doubt--;
    }
    rl_metrics_lost(&c->metrics, reason);
    rl_holds_unwatch(&c->holds, h);
    char message[200], shown[RL_NAME_SHOWN_MAX];
    snprintf(message, sizeof message, "lock \"%s\" lost while held: %s",
             rl_name_shown(h->name, h->name_len, shown), rl_lost_reason_name(reason));
    rl_events_push(&c->events, RL_EVENT_LOST, h->name, h->name_len, h->context, reason, 1, message);
}

/* ASKING goes out with the next exchange on conn (opened for it): an ASK answer's retry. */
static rl_status ask_first(rl_conn *conn, int64_t timeout_ms, rl_error *err) {
    static const char *argv[1] = {"ASKING"};
    static size_t lens[1] = {6};
    rl_cmd cmd = {1, argv, lens};
    rl_status st = conn->fd < 0 ? rl_conn_open(conn, timeout_ms, err) : RL_OK;
    if (st == RL_OK) rl_conn_defer(conn, &cmd);
    return st;
}

/* One script call on a connection of `pool` (ASKING first when `asking`). */
typedef struct script_call {
    rl_client *c;
    rl_script_id id;
    rl_cmd cmd;
    redisReply **reply;
    int idempotent;
    const rl_cmd *then_send;
    rl_reply_test wrote;
} script_call;

/* The identity of the server that ran this thread's last script call (rl_client_answered_by). */
static _Thread_local uint32_t answered_by;

uint32_t rl_client_answered_by(void) {
    return answered_by;
}

static _Thread_local rl_sub_send *capturing;

void rl_client_capture(rl_sub_send *into) {
    capturing = into;
}

void rl_client_capture_free(rl_sub_send *s) {
    free(s->cmd.argv); /* one block: argv, lens, then the bytes */
    s->cmd = (rl_cmd){0, NULL, NULL};
}

/* The call as one block that outlives the caller's arguments (rl_client_capture). */
static void capture(rl_client *c, rl_pool *pool, int asking, const script_call *call) {
    rl_sub_send *into = capturing;
    const rl_options *o = &c->cfg.options;
    into->cmd = (rl_cmd){0, NULL, NULL};
    if (asking || pool != &c->pool || call->then_send || o->sync_replicas > 0 || o->sync_aof ||
        !atomic_load(&c->scripts.known[call->id]))
        return;
    int argc = call->cmd.argc;
    size_t bytes = 0;
    for (int i = 2; i < argc; i++) /* numkeys and the arguments */
        bytes += call->cmd.lens[i];
    char *block = malloc((size_t)argc * (sizeof(char *) + sizeof(size_t)) + bytes + 1);
    if (!block) return;
    const char **argv = (const char **)(void *)block;
    size_t *lens = (size_t *)(void *)(block + (size_t)argc * sizeof(char *));
    char *p = (char *)(lens + argc);
    argv[0] = "EVALSHA", lens[0] = 7;
    argv[1] = c->scripts.sha[call->id], lens[1] = 40; /* never changes once known */
    for (int i = 2; i < argc; i++) {
        lens[i] = call->cmd.lens[i];
        memcpy(p, call->cmd.argv[i], lens[i]);
        argv[i] = p;
        p += lens[i];
    }
    into->cmd = (rl_cmd){argc, argv, lens};
    into->pool = pool;
}

static rl_status run_script(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                            int *repeatable, rl_error *err) {
    script_call *call = arg;
    rl_client *c = call->c;
    if (capturing) {
        capture(c, pool, asking, call);
        redirect->kind = RL_REDIRECT_NONE;
        *repeatable = 0;
        return RL_NOT_ACQUIRED;
    }
    rl_conn *conn = rl_pool_take(pool);
    if (!conn) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    rl_status st = asking ? ask_first(conn, c->cfg.options.command_timeout_ms, err) : RL_OK;
    conn->readonly = 0;
    if (st == RL_OK)
        st = rl_scripts_run(&c->scripts, conn, c->cfg.options.command_timeout_ms, call->id, 1,
                            &call->cmd, call->reply, call->idempotent, err);
    if (st == RL_ERR_CONNECTION && conn->readonly) /* refused, not run: once more, at the master */
        st = rl_scripts_run(&c->scripts, conn, c->cfg.options.command_timeout_ms, call->id, 1,
                            &call->cmd, call->reply, call->idempotent, err);
    *redirect = conn->redirect;
    *repeatable = call->idempotent || !conn->maybe_sent;
    answered_by = st == RL_OK ? conn->server : 0;
    if (st == RL_OK && call->then_send) rl_conn_defer(conn, call->then_send);
    if (st == RL_OK && call->wrote && call->wrote(*call->reply)) {
        int acked;
        st = rl_replicas_sync(conn, &acked, err);
        if (c->cfg.options.sync_replicas > 0 || c->cfg.options.sync_aof)
            rl_metrics_synced(&c->metrics, acked);
        if (st != RL_OK && st != RL_ERR_REPLICA) { /* the caller sees a plain failure */
            freeReplyObject(*call->reply);
            *call->reply = NULL;
        }
    }
    rl_pool_give(pool, conn);
    return st;
}

rl_status rl_client_script(rl_client *c, rl_script_id id, int argc, const char **argv, size_t *lens,
                           redisReply **reply, int idempotent, const rl_cmd *then_send,
                           rl_reply_test wrote, rl_error *err) {
    script_call call = {c, id, {argc, argv, lens}, reply, idempotent, then_send, wrote};
    return c->deploy->call(c, &call.cmd, RL_SCRIPT_ARGV_HEAD, run_script, &call, err);
}

typedef struct plain_call {
    rl_client *c;
    rl_cmd cmd;
    redisReply **reply;
} plain_call;

static rl_status run_command(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                             int *repeatable, rl_error *err) {
    plain_call *call = arg;
    rl_conn *conn = rl_pool_take(pool);
    if (!conn) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    int64_t timeout_ms = call->c->cfg.options.command_timeout_ms;
    rl_status st = asking ? ask_first(conn, timeout_ms, err) : RL_OK;
    if (st == RL_OK) st = rl_conn_exchange(conn, timeout_ms, 1, &call->cmd, call->reply, 1, err);
    rl_pool_give(pool, conn);
    *repeatable = 1; /* read-only */
    if (st == RL_OK && (*call->reply)->type == REDIS_REPLY_ERROR) {
        rl_redirect_parse(*call->reply, redirect);
        st = rl_fail_reply(err, call->cmd.argv[0], *call->reply);
        freeReplyObject(*call->reply);
        *call->reply = NULL;
    }
    return st;
}

rl_status rl_client_command(rl_client *c, int argc, const char **argv, size_t *lens,
                            redisReply **reply, rl_error *err) {
    plain_call call = {c, {argc, argv, lens}, reply};
    return c->deploy->call(c, &call.cmd, 1, run_command, &call, err);
}

rl_status rl_client_commands(rl_client *c, size_t n, const rl_cmd *cmds, redisReply **replies,
                             rl_error *err) {
    return c->deploy->commands(c, n, cmds, replies, err);
}

void rl_client_stats(rl_client *c, rl_stats *out) {
    memset(out, 0, sizeof *out);
    if (rl_client_enter(c, NULL) != RL_OK) return;
    pthread_mutex_lock(&c->mu);
    out->renew_rounds = c->watchdog.rounds;
    out->renew_round_trips = c->watchdog.round_trips;
    out->renew_calls = c->watchdog.calls;
    out->renewed_holds = c->watchdog.renewed;
    out->last_round_holds = c->watchdog.last_round_holds;
    out->renew_failed_rounds = c->watchdog.failed_rounds;
    out->renew_round_us = c->watchdog.round_us;
    out->renew_round_cpu_us = c->watchdog.round_cpu_us;
    out->last_round_us = c->watchdog.last_round_us;
    out->last_round_cpu_us = c->watchdog.last_round_cpu_us;
    out->last_round_net_us = c->watchdog.last_round_net_us;
    out->watchdog_running = c->watchdog.running;
    out->holds = c->holds.locks;
    out->in_doubt = c->holds.in_doubt;
    out->in_doubt_total = c->holds.doubted;
    out->server_changes = c->watchdog.server_changes;
    out->master_changes = atomic_load(&c->master_changes);
    out->last_round_nodes = c->watchdog.last_round_nodes;
    pthread_mutex_unlock(&c->mu);
    rl_metrics_read(&c->metrics, out);
    c->deploy->stats(c, out);
    out->subscriptions = rl_wait_subscriptions(c);
    rl_client_leave(c);
}

/* Lock order, here and everywhere: c->mu before events.mu; the client's pool, scripts and
 * subscriber mutexes before the deployment's (a connection asks the resolver, a Sentinel's
 * mutex, under a pool's mu); the deployment's before workers.mu and cfg.fd_mu (a cluster's map
 * mutex comes before its nodes' pool and subscriber mutexes, a subscriber's mu before workers.mu
 * as its notified tickets schedule jobs, and a connection's socket changes under fd_mu inside a
 * pool's or a subscriber's mu); the others are never nested. fork() takes them all, on every
 * deployment (each cluster node's pool and subscriber too), so that the child inherits no state
 * midway through a change. */
void rl_client_before_fork(rl_client *c) {
    pthread_mutex_lock(&c->mu);
    pthread_mutex_lock(&c->events.mu);
    pthread_mutex_lock(&c->pool.mu);
    pthread_mutex_lock(&c->scripts.mu);
    pthread_mutex_lock(&c->sub.mu);
    c->deploy->fork_lock(c);
    pthread_mutex_lock(&c->workers.mu);
    pthread_mutex_lock(&c->cfg.fd_mu);
}

void rl_client_after_fork_parent(rl_client *c) {
    pthread_mutex_unlock(&c->cfg.fd_mu);
    pthread_mutex_unlock(&c->workers.mu);
    c->deploy->fork_unlock(c);
    pthread_mutex_unlock(&c->sub.mu);
    pthread_mutex_unlock(&c->scripts.mu);
    pthread_mutex_unlock(&c->pool.mu);
    pthread_mutex_unlock(&c->events.mu);
    pthread_mutex_unlock(&c->mu);
}

/* Condition variables may have had waiters in threads the child does not have: start them
 * afresh, on every deployment, before anything waits on or destroys them. */
void rl_client_after_fork_child(rl_client *c) {
    rl_cond_init(&c->watchdog.wake);
    rl_cond_init(&c->watchdog.round_done);
    rl_cond_init(&c->events.more);
    rl_cond_init(&c->workers.more);
    rl_pool_after_fork_child(&c->pool);
    rl_sub_after_fork_child(&c->sub);
    c->deploy->after_fork_child(c);
    rl_client_after_fork_parent(c);
}
