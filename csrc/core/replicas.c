#include "replicas.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

/* Replicas ROLE lists as connected to this master (0 when it is not a master). */
static size_t connected_replicas(const redisReply *role) {
    if (!role || role->type != REDIS_REPLY_ARRAY || role->elements < 3) return 0;
    const redisReply *kind = role->element[0], *list = role->element[2];
    if (kind->type != REDIS_REPLY_STRING || kind->len != 6 || memcmp(kind->str, "master", 6) != 0)
        return 0;
    return list->type == REDIS_REPLY_ARRAY ? list->elements : 0;
}

/* WAIT for `want` replicas, then ROLE, on conn; *acked and *connected from the answers. */
static rl_status wait_and_ask(rl_conn *conn, int want, long long *acked, size_t *connected,
                              rl_error *err) {
    const rl_options *o = &conn->cfg->options;
    char wanted[16], timeout[24];
    const char *wait_argv[3] = {"WAIT", wanted, timeout}, *role_argv[1] = {"ROLE"};
    size_t wait_lens[3] = {
        4, (size_t)snprintf(wanted, sizeof wanted, "%d", want),
        (size_t)snprintf(timeout, sizeof timeout, "%lld", (long long)o->sync_timeout_ms)};
    size_t role_lens[1] = {4};
    rl_cmd cmds[2] = {{3, wait_argv, wait_lens}, {1, role_argv, role_lens}};
    redisReply *replies[2] = {NULL, NULL};
    /* Not retried on a fresh connection: WAIT there would cover none of this write. */
    rl_status st = rl_conn_exchange(conn, o->sync_timeout_ms + o->command_timeout_ms, 2, cmds,
                                    replies, 0, err);
    if (st != RL_OK) return st;
    const redisReply *reply = replies[0];
    if (reply->type == REDIS_REPLY_ERROR)
        st = rl_fail_reply(err, "WAIT", reply);
    else if (reply->type != REDIS_REPLY_INTEGER)
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to WAIT (type %d)", reply->type);
    *acked = reply->type == REDIS_REPLY_INTEGER ? reply->integer : 0;
    *connected = connected_replicas(replies[1]);
    conn->replicas_seen = (int)*connected + 1;
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);
    return st;
}

rl_status rl_replicas_sync(rl_conn *conn, rl_error *err) {
    const rl_options *o = &conn->cfg->options;
    if (o->sync_replicas <= 0) return RL_OK;
    /* WAIT blocks its whole timeout when fewer replicas are connected than it asks for, and
     * for no time when it asks for none: ask for no more than ROLE last listed here, and learn
     * the count again from the ROLE that goes with every WAIT. */
    if (conn->replicas_seen == 0) { /* a new socket: one ROLE first, once */
        static const char *role_argv[1] = {"ROLE"};
        static size_t role_lens[1] = {4};
        rl_cmd role = {1, role_argv, role_lens};
        redisReply *reply = NULL;
        rl_status st = rl_conn_exchange(conn, o->command_timeout_ms, 1, &role, &reply, 0, err);
        if (st != RL_OK) return st;
        conn->replicas_seen = (int)connected_replicas(reply) + 1;
        freeReplyObject(reply);
    }
    int want = o->sync_replicas;
    if (conn->replicas_seen - 1 < want) want = conn->replicas_seen - 1;
    long long acked = 0;
    size_t connected = 0;
    rl_status st = wait_and_ask(conn, want, &acked, &connected, err);
    if (st == RL_OK && acked == 0 && connected > 0 && want == 0) {
        /* Replicas came since the last look: wait for them after all. */
        want = connected < (size_t)o->sync_replicas ? (int)connected : o->sync_replicas;
        st = wait_and_ask(conn, want, &acked, &connected, err);
    }
    if (st == RL_OK && acked == 0 && connected > 0)
        st = rl_fail(err, RL_ERR_REPLICA,
                     "no replica acknowledged the lock write within %lld ms (%zu connected)",
                     (long long)o->sync_timeout_ms, connected);
    return st;
}
