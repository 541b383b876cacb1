/* The standalone deployment (redis://, rediss://, unix://): one server, at the URL's address.
 * Every call goes to the client's pool, waiters to its subscriber, renewals to the watchdog's
 * connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "deploy.h"
#include "error.h"
#include "identity.h"
#include "renew_calls.h"
#include "replicas.h"

static rl_status create(rl_client *c, rl_error *err) {
    (void)c, (void)err;
    return RL_OK;
}

static void nothing(rl_client *c) {
    (void)c;
}

rl_status rl_standalone_call(rl_client *c, const rl_cmd *cmd, int first_key, rl_deploy_run run,
                             void *arg, rl_error *err) {
    (void)cmd, (void)first_key;
    rl_redirect ignored;
    int repeatable;
    return run(&c->pool, 0, arg, &ignored, &repeatable, err);
}

rl_status rl_standalone_commands(rl_client *c, size_t n, const rl_cmd *cmds, redisReply **replies,
                                 rl_error *err) {
    rl_conn *conn = rl_pool_take(&c->pool);
    if (!conn) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    rl_status st =
        rl_conn_exchange(conn, c->cfg.options.command_timeout_ms, n, cmds, replies, 1, err);
    rl_pool_give(&c->pool, conn);
    return st;
}

rl_status rl_standalone_scan(rl_client *c, uint64_t cursor, rl_cmd *cmd, redisReply **reply,
                             uint64_t *next, rl_error *err) {
    (void)cursor; /* argv[1] carries it */
    rl_status st = rl_client_command(c, cmd->argc, cmd->argv, cmd->lens, reply, err);
    const redisReply *r = st == RL_OK ? *reply : NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        *next = strtoull(r->element[0]->str, NULL, 10);
    return st;
}

rl_status rl_standalone_check_name(const void *name, size_t len, const char *what, rl_error *err) {
    (void)name, (void)len, (void)what, (void)err;
    return RL_OK;
}

rl_subscriber *rl_standalone_subscriber(rl_client *c, const char *channel, size_t len,
                                        rl_error *err) {
    (void)channel, (void)len, (void)err;
    return &c->sub;
}

void rl_standalone_channel_moved(rl_client *c, const char *channel, size_t len) {
    (void)c, (void)channel, (void)len; /* one server: channels never move */
}

size_t rl_standalone_subscriptions(rl_client *c) {
    return rl_sub_count(&c->sub);
}

int64_t rl_standalone_send_deferred(rl_client *c, int64_t idle_ms, int64_t timeout_ms) {
    (void)c, (void)idle_ms, (void)timeout_ms; /* c->pool is the only pool: deferred.c's own */
    return 0;
}

/* Every call of the round pipelined on the watchdog's connection, then replica sync. */
rl_status rl_standalone_renew(rl_client *c, rl_hold **batch, size_t n, int64_t lease,
                              int64_t timeout_ms, long long *answers, uint32_t *servers,
                              rl_renew_outcome *out, rl_error *err) {
    rl_watchdog *wd = &c->watchdog;
    rl_renew_calls b;
    uint64_t exchanges_before = wd->conn.exchanges;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        answers[i] = -1, servers[i] = 0;
    rl_status st = RL_ERR_MEMORY;
    if (rl_renew_calls_build(&b, &c->holds, batch, n, NULL, lease) == 0) {
        /* Which server answers: asked in the same pipeline, ahead of the renewals. */
        redisReply *identity = NULL;
        /* A connection opened for the round connects within its time: the watchdog must decide
         * (in doubt, lost) before a lease ends, however long connect_timeout is. */
        wd->conn.connect_by = rl_now_ms() + timeout_ms;
        st = rl_scripts_run_led(&c->scripts, &wd->conn, timeout_ms, RL_SCRIPT_RENEW, b.ncalls,
                                b.cmds, b.replies, 1, &rl_identity_cmd, &identity, err);
        wd->conn.connect_by = 0;
        uint32_t server = rl_identity_of(identity);
        freeReplyObject(identity);
        rl_error sync_err;
        int acked;
        if (st == RL_OK && rl_replicas_sync(&wd->conn, &acked, &sync_err) != RL_OK) {
            char message[RL_QUOTING_MESSAGE_SIZE];
            snprintf(message, sizeof message, "renewal of %zu hold(s): %s", n, sync_err.message);
            rl_events_push(&c->events, RL_EVENT_SYNC_FAILED, NULL, 0, 0, RL_LOST_NONE, n, message);
        }
        for (size_t k = 0; st == RL_OK && k < b.ncalls; k++)
            for (size_t j = 0; j < b.count[k]; j++)
                answers[b.first[k] + j] = rl_renew_calls_answer(&b, k, j),
                                     servers[b.first[k] + j] = server;
        out->calls = b.ncalls;
        out->nodes = 1;
    }
    rl_renew_calls_free(&b);
    out->round_trips = wd->conn.exchanges - exchanges_before;
    return st;
}

void rl_standalone_after_fork_child(rl_client *c) {
    (void)c;
}

void rl_standalone_stats(rl_client *c, rl_stats *out) {
    (void)c, (void)out;
}

const rl_deploy rl_deploy_standalone = {
    .name = "standalone",
    .numsub = "NUMSUB",
    .create = create,
    .stop = nothing,
    .destroy = nothing,
    .fork_lock = nothing,
    .fork_unlock = nothing,
    .after_fork_child = rl_standalone_after_fork_child,
    .forget_after_fork = nothing,
    .call = rl_standalone_call,
    .commands = rl_standalone_commands,
    .scan = rl_standalone_scan,
    .check_name = rl_standalone_check_name,
    .subscriber = rl_standalone_subscriber,
    .channel_moved = rl_standalone_channel_moved,
    .subscriptions = rl_standalone_subscriptions,
    .send_deferred = rl_standalone_send_deferred,
    .renew = rl_standalone_renew,
    .stats = rl_standalone_stats,
};
