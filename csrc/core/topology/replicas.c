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

/* WAITAOF's answer [local fsyncs, replicas' fsyncs]: RL_OK with *acked, or why not. */
static rl_status read_waitaof(const redisReply *r, const rl_options *o, size_t connected, int want,
                              int *acked, rl_error *err) {
    if (r->type == REDIS_REPLY_ERROR) return rl_fail_reply(err, "WAITAOF", r);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER)
        return rl_fail(err, RL_ERR_SERVER, "unexpected answer to WAITAOF (type %d)", r->type);
    *acked = (int)r->element[1]->integer;
    if (r->element[0]->integer < 1)
        return rl_fail(err, RL_ERR_REPLICA,
                       "the server did not write the lock to its append-only file within %lld ms",
                       (long long)o->sync_timeout_ms);
    if (want > 0 && *acked == 0 && connected > 0)
        return rl_fail(err, RL_ERR_REPLICA,
                       "no replica wrote the lock to its append-only file within %lld ms (%zu "
                       "connected)",
                       (long long)o->sync_timeout_ms, connected);
    return RL_OK;
}

static rl_status read_wait(const redisReply *r, const rl_options *o, size_t connected, int *acked,
                           rl_error *err) {
    if (r->type == REDIS_REPLY_ERROR) return rl_fail_reply(err, "WAIT", r);
    if (r->type != REDIS_REPLY_INTEGER)
        return rl_fail(err, RL_ERR_SERVER, "unexpected answer to WAIT (type %d)", r->type);
    *acked = (int)r->integer;
    if (r->integer == 0 && connected > 0)
        return rl_fail(err, RL_ERR_REPLICA,
                       "no replica acknowledged the lock write within %lld ms (%zu connected)",
                       (long long)o->sync_timeout_ms, connected);
    return RL_OK;
}

rl_status rl_replicas_sync(rl_conn *conn, int *acked, rl_error *err) {
    const rl_options *o = &conn->cfg->options;
    *acked = -1;
    int want = o->sync_replicas;
    if (want <= 0 && !o->sync_aof) return RL_OK;
    if (want > 0 && conn->replicas_seen == 0) {
        /* None were listed the last time: no wait for replicas that are not there (it would
         * last its whole timeout), unless one is back. */
        size_t listed = 0;
        rl_status st = ask_role(conn, o->command_timeout_ms, &listed, err);
        if (st != RL_OK) return st;
        conn->replicas_seen = (int)listed;
        if (listed == 0) want = 0;
    }
    if (want <= 0 && !o->sync_aof) return RL_OK; /* stands, not waited for: *acked stays -1 */
    /* WAITAOF 1 <replicas> <timeout>: on this server's disk, and on the replicas' (sync_aof);
     * else WAIT <replicas> <timeout>. ROLE, in the same round trip, when replicas count. */
    char want_text[16], timeout[24];
    const char *aof_argv[4] = {"WAITAOF", "1", want_text, timeout};
    const char *wait_argv[3] = {"WAIT", want_text, timeout}, *role_argv[1] = {"ROLE"};
    size_t want_len = (size_t)snprintf(want_text, sizeof want_text, "%d", want > 0 ? want : 0);
    size_t timeout_len =
        (size_t)snprintf(timeout, sizeof timeout, "%lld", (long long)o->sync_timeout_ms);
    size_t aof_lens[4] = {7, 1, want_len, timeout_len}, wait_lens[3] = {4, want_len, timeout_len};
    size_t role_lens[1] = {4};
    rl_cmd cmds[2] = {o->sync_aof ? (rl_cmd){4, aof_argv, aof_lens}
                                  : (rl_cmd){3, wait_argv, wait_lens},
                      {1, role_argv, role_lens}};
    size_t ncmds = want > 0 ? 2 : 1;
    redisReply *replies[2] = {NULL, NULL};
    /* Not retried on a fresh connection: a wait there would cover none of this write. */
    rl_status st = rl_conn_exchange(conn, o->sync_timeout_ms + o->command_timeout_ms, ncmds, cmds,
                                    replies, 0, err);
    if (st != RL_OK) return st;
    size_t connected = 0;
    if (ncmds == 2) conn->replicas_seen = (int)(connected = connected_replicas(replies[1]));
    st = o->sync_aof ? read_waitaof(replies[0], o, connected, want, acked, err)
                     : read_wait(replies[0], o, connected, acked, err);
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);
    return st;
}
