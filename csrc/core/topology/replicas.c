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

/* Asks ROLE alone: the replicas listed now. Not retried on a fresh connection: a WAIT there
 * would cover none of the write. */
static rl_status ask_role(rl_conn *conn, int64_t timeout_ms, size_t *listed, rl_error *err) {
    const char *argv[1] = {"ROLE"};
    size_t lens[1] = {4};
    rl_cmd cmd = {1, argv, lens};
    redisReply *reply = NULL;
    rl_status st = rl_conn_exchange(conn, timeout_ms, 1, &cmd, &reply, 0, err);
    if (st != RL_OK) return st;
    *listed = connected_replicas(reply);
    freeReplyObject(reply);
    return RL_OK;
}

rl_status rl_replicas_sync(rl_conn *conn, int *acked, rl_error *err) {
    const rl_options *o = &conn->cfg->options;
    *acked = -1;
    if (o->sync_replicas <= 0) return RL_OK;
    if (conn->replicas_seen == 0) {
        /* None were listed the last time: no WAIT for replicas that are not there (it would
         * last its whole timeout), unless one is back. */
        size_t listed = 0;
        rl_status st = ask_role(conn, o->command_timeout_ms, &listed, err);
        if (st != RL_OK) return st;
        conn->replicas_seen = (int)listed;
        if (listed == 0) return RL_OK; /* stands, not waited for: *acked stays -1 */
    }
    char want[16], timeout[24];
    const char *wait_argv[3] = {"WAIT", want, timeout}, *role_argv[1] = {"ROLE"};
    size_t wait_lens[3] = {
        4, (size_t)snprintf(want, sizeof want, "%d", o->sync_replicas),
        (size_t)snprintf(timeout, sizeof timeout, "%lld", (long long)o->sync_timeout_ms)};
    size_t role_lens[1] = {4};
    rl_cmd cmds[2] = {{3, wait_argv, wait_lens}, {1, role_argv, role_lens}};
    redisReply *replies[2] = {NULL, NULL};
    /* Not retried on a fresh connection: WAIT there would cover none of this write. */
    rl_status st = rl_conn_exchange(conn, o->sync_timeout_ms + o->command_timeout_ms, 2, cmds,
                                    replies, 0, err);
    if (st != RL_OK) return st;
    const redisReply *acked_reply = replies[0];
    if (acked_reply->type == REDIS_REPLY_ERROR) {
        st = rl_fail_reply(err, "WAIT", acked_reply);
    } else if (acked_reply->type != REDIS_REPLY_INTEGER) {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to WAIT (type %d)", acked_reply->type);
    } else {
        size_t connected = connected_replicas(replies[1]);
        conn->replicas_seen = (int)connected;
        *acked = (int)acked_reply->integer;
        if (acked_reply->integer == 0 && connected > 0)
            st = rl_fail(err, RL_ERR_REPLICA,
                         "no replica acknowledged the lock write within %lld ms (%zu connected)",
                         (long long)o->sync_timeout_ms, connected);
    }
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);
    return st;
}
