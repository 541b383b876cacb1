/* Which kind a lock is (rl_kind_of), and the helpers the kinds' calls share: arguments, the
 * script call, and the answers every kind reads alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kind.h"

#define MAX_ARGS 12

const rl_kind *rl_kind_of(rl_lock_kind kind) {
    switch (kind) {
    case RL_LOCK_FENCED:
        return &rl_kind_fenced;
    case RL_LOCK_FAIR:
        return &rl_kind_fair;
    case RL_LOCK_READ:
        return &rl_kind_read;
    case RL_LOCK_WRITE:
        return &rl_kind_write;
    default:
        return &rl_kind_reentrant;
    }
}

rl_arg rl_arg_str(const char *s) {
    return (rl_arg){s, strlen(s)};
}

rl_arg rl_arg_bytes(const void *p, size_t len) {
    return (rl_arg){p, len};
}

rl_arg rl_arg_num(char buf[24], int64_t v) {
    return (rl_arg){buf, (size_t)snprintf(buf, 24, "%lld", (long long)v)};
}

rl_status rl_kind_run(rl_lock *l, rl_script_id id, int nkeys, const rl_arg *args, int nargs,
                      int idempotent, const rl_cmd *then_send, rl_reply_test wrote,
                      redisReply **reply, rl_error *err) {
    const char *argv[RL_SCRIPT_ARGV_HEAD + MAX_ARGS];
    size_t lens[RL_SCRIPT_ARGV_HEAD + MAX_ARGS];
    char numkeys[4];
    argv[2] = numkeys;
    lens[2] = (size_t)snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    for (int i = 0; i < nargs; i++) {
        argv[RL_SCRIPT_ARGV_HEAD + i] = args[i].p;
        lens[RL_SCRIPT_ARGV_HEAD + i] = args[i].len;
    }
    return rl_client_script(l->client, id, RL_SCRIPT_ARGV_HEAD + nargs, argv, lens, reply,
                            idempotent, then_send, wrote, err);
}

char *rl_joined(const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
                size_t *len) {
    size_t c_len = c ? strlen(c) : 0;
    char *out = malloc(a_len + b_len + c_len + 1);
    if (!out) return NULL;
    memcpy(out, a, a_len);
    memcpy(out + a_len, b, b_len);
    if (c_len) memcpy(out + a_len + b_len, c, c_len);
    out[a_len + b_len + c_len] = '\0';
    *len = a_len + b_len + c_len;
    return out;
}

int rl_reply_is_reentered(const redisReply *r) {
    return r->type == REDIS_REPLY_STATUS && r->len == 9 && memcmp(r->str, "REENTERED", 9) == 0;
}

int rl_reply_is_acquired(const redisReply *r) {
    return r->type == REDIS_REPLY_NIL || rl_reply_is_reentered(r);
}

int rl_reply_is_one(const redisReply *r) {
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}
