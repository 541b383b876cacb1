/* The Redis calls of each lock kind: which script, which keys and arguments, and what its
 * answer means (docs/protocol.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "lock.h"
#include "names.h"
#include "random.h"

#define PUBLISH "publish"
#define ONE_MAY_GO "0" /* unlock message: one waiter may proceed */
#define ALL_MAY_GO "1" /* write unlock message: every waiter may proceed */
#define MAX_ARGS 12

typedef struct arg {
    const char *p;
    size_t len;
} arg;

static arg str(const char *s) {
    return (arg){s, strlen(s)};
}
static arg bytes(const char *p, size_t len) {
    return (arg){p, len};
}
static arg num(char buf[24], int64_t v) {
    return (arg){buf, (size_t)snprintf(buf, 24, "%lld", (long long)v)};
}

/* EVALSHA <id> <nkeys> args... on a pooled connection (see rl_client_script). */
static rl_status run(rl_lock *l, rl_script_id id, int nkeys, const arg *args, int nargs,
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

static char *joined(const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
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

int rl_lock_make_keys(rl_lock *l) {
    const char *channel = l->kind == RL_LOCK_READ || l->kind == RL_LOCK_WRITE
                              ? "redisson_rwlock"
                              : "redisson_lock__channel";
    l->channel = rl_name_prefixed(channel, l->name, l->name_len, 0, &l->channel_len);
    l->latch_prefix =
        rl_name_prefixed("redisson_unlock_latch", l->name, l->name_len, 1, &l->latch_prefix_len);
    if (!l->channel || !l->latch_prefix) return -1;
    l->latch_prefix[l->latch_prefix_len++] = ':';
    switch (l->kind) {
    case RL_LOCK_FENCED:
        l->token_key =
            rl_name_prefixed("redisson_lock_token", l->name, l->name_len, 0, &l->token_key_len);
        return l->token_key ? 0 : -1;
    case RL_LOCK_FAIR:
        l->queue_key =
            rl_name_prefixed("redisson_lock_queue", l->name, l->name_len, 0, &l->queue_key_len);
        l->deadlines_key = rl_name_prefixed("redisson_lock_timeout", l->name, l->name_len, 0,
                                            &l->deadlines_key_len);
        return l->queue_key && l->deadlines_key ? 0 : -1;
    case RL_LOCK_READ:
    case RL_LOCK_WRITE:
        if (memchr(l->name, '{', l->name_len))
            l->key_base = joined(l->name, l->name_len, "", 0, NULL, &l->key_base_len);
        else
            l->key_base = joined("{", 1, l->name, l->name_len, "}", &l->key_base_len);
        return l->key_base ? 0 : -1;
    default:
        return 0;
    }
}

size_t rl_lock_field(const rl_lock *l, const char *owner, size_t owner_len, char *out) {
    memcpy(out, owner, owner_len);
    if (l->kind == RL_LOCK_WRITE) {
        memcpy(out + owner_len, ":write", 7);
        return owner_len + 6;
    }
    out[owner_len] = '\0';
    return owner_len;
}

char *rl_lock_read_keys(const rl_lock *l, const char *owner, size_t owner_len, size_t *len) {
    if (l->kind != RL_LOCK_READ) return NULL;
    char *prefix = joined(l->key_base, l->key_base_len, ":", 1, NULL, len);
    if (!prefix) return NULL;
    char *keys = joined(prefix, *len, owner, owner_len, ":rwlock_timeout", len);
    free(prefix);
    return keys;
}

char *rl_lock_wait_channel(const rl_lock *l, const char *owner, size_t owner_len, size_t *len) {
    if (l->kind != RL_LOCK_FAIR) return joined(l->channel, l->channel_len, "", 0, NULL, len);
    char *prefix = joined(l->channel, l->channel_len, ":", 1, NULL, len);
    if (!prefix) return NULL;
    char *channel = joined(prefix, *len, owner, owner_len, NULL, len);
    free(prefix);
    return channel;
}

/* Whether an answer is a write, for replica sync. */
static int reply_is_reentered(const redisReply *r) {
    return r->type == REDIS_REPLY_STATUS && r->len == 9 && memcmp(r->str, "REENTERED", 9) == 0;
}
static int reply_is_acquired(const redisReply *r) {
    return r->type == REDIS_REPLY_NIL || reply_is_reentered(r);
}
static int reply_is_integer(const redisReply *r) {
    return r->type == REDIS_REPLY_INTEGER;
}
static int reply_is_one(const redisReply *r) {
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}
/* {-1, token, re-entered}: acquired. A refusal is {PTTL, -1}, which reads {-1, -1} when the
 * holder's key has no TTL: only a real token (>= 1) means acquired. */
static int reply_is_token(const redisReply *r) {
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
           r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == -1 &&
           r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer >= 1;
}

static int64_t integer_of(const redisReply *r) {
    if (r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r->type == REDIS_REPLY_STRING) return strtoll(r->str, NULL, 10);
    return -1;
}

/* A read hold of `owner`: the acquire call of the read side. */
static rl_status call_read_acquire(rl_lock *l, const char *owner, size_t owner_len, arg lease,
                                   redisReply **reply, rl_error *err) {
    size_t keys_len;
    char *keys = rl_lock_read_keys(l, owner, owner_len, &keys_len);
    if (!keys) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char writer[RL_OWNER_MAX];
    size_t writer_len = owner_len + 6; /* the write side's field of this owner */
    memcpy(writer, owner, owner_len);
    memcpy(writer + owner_len, ":write", 7);
    arg args[] = {bytes(l->name, l->name_len), bytes(keys, keys_len), lease,
                  bytes(owner, owner_len), bytes(writer, writer_len)};
    rl_status st =
        run(l, RL_SCRIPT_READ_ACQUIRE, 2, args, 5, 0, NULL, reply_is_acquired, reply, err);
    free(keys);
    return st;
}

void rl_lock_call_undo_acquire(rl_lock *l, const char *owner, size_t owner_len, int64_t lease) {
    char field[RL_OWNER_MAX], request_id[2 * RL_REQUEST_ID_BYTES + 1];
    size_t field_len = rl_lock_field(l, owner, owner_len, field);
    rl_random_hex(request_id, RL_REQUEST_ID_BYTES);
    redisReply *reply = NULL;
    rl_error ignored;
    if (rl_lock_call_release(l, field, field_len, lease, request_id, 0, &reply, &ignored) == RL_OK)
        freeReplyObject(reply);
}

rl_status rl_lock_call_acquire(rl_lock *l, const char *owner, size_t owner_len, int64_t lease_ms,
                               int queue, int64_t wait_window_ms, int64_t *wait_hint_ms,
                               int64_t *token, int *reentered, rl_error *err) {
    char lease_s[24], window_s[24], now_s[24], field[RL_OWNER_MAX];
    arg name = bytes(l->name, l->name_len), lease = num(lease_s, lease_ms);
    redisReply *reply = NULL;
    rl_status st;
    switch (l->kind) {
    case RL_LOCK_FENCED: {
        arg args[] = {name, bytes(l->token_key, l->token_key_len), lease, bytes(owner, owner_len)};
        st = run(l, RL_SCRIPT_FENCED_ACQUIRE, 2, args, 4, 0, NULL, reply_is_token, &reply, err);
        break;
    }
    case RL_LOCK_FAIR: {
        arg args[] = {name,
                      bytes(l->queue_key, l->queue_key_len),
                      bytes(l->deadlines_key, l->deadlines_key_len),
                      lease,
                      bytes(owner, owner_len),
                      num(window_s, wait_window_ms),
                      num(now_s, rl_epoch_ms()),
                      str(queue ? "1" : "0")};
        st = run(l, RL_SCRIPT_FAIR_ACQUIRE, 3, args, 8, 0, NULL, reply_is_acquired, &reply, err);
        break;
    }
    case RL_LOCK_READ:
        st = call_read_acquire(l, owner, owner_len, lease, &reply, err);
        break;
    case RL_LOCK_WRITE: {
        size_t field_len = rl_lock_field(l, owner, owner_len, field);
        arg args[] = {name, lease, bytes(field, field_len)};
        st = run(l, RL_SCRIPT_WRITE_ACQUIRE, 1, args, 3, 0, NULL, reply_is_acquired, &reply, err);
        break;
    }
    default: {
        arg args[] = {name, lease, bytes(owner, owner_len)};
        st = run(l, RL_SCRIPT_ACQUIRE, 1, args, 3, 0, NULL, reply_is_acquired, &reply, err);
        break;
    }
    }
    if (st == RL_ERR_REPLICA) {
        freeReplyObject(reply);
        rl_lock_call_undo_acquire(l, owner, owner_len, lease_ms);
        return st;
    }
    if (st != RL_OK) return st;
    *wait_hint_ms = -1;
    *reentered = reply_is_reentered(reply);
    if (reply_is_acquired(reply)) {
        st = RL_OK;
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        /* A fair one-try answers 1, not a time. */
        if (!(l->kind == RL_LOCK_FAIR && !queue)) *wait_hint_ms = reply->integer;
        st = RL_NOT_ACQUIRED;
    } else if (l->kind == RL_LOCK_FENCED && reply->type == REDIS_REPLY_ARRAY &&
               reply->elements >= 2) {
        int64_t pttl = integer_of(reply->element[0]);
        if (reply_is_token(reply)) {
            *token = reply->element[1]->integer;
            *reentered = reply->elements >= 3 && integer_of(reply->element[2]) == 1;
            st = RL_OK;
        } else {
            *wait_hint_ms = pttl;
            st = RL_NOT_ACQUIRED;
        }
    } else {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to acquire (type %d)", reply->type);
    }
    freeReplyObject(reply);
    return st;
}

void rl_lock_call_leave_queue(rl_lock *l, const char *owner, size_t owner_len,
                              int64_t wait_window_ms) {
    char window_s[24];
    arg args[] = {bytes(l->queue_key, l->queue_key_len),
                  bytes(l->deadlines_key, l->deadlines_key_len),
                  bytes(l->name, l->name_len),
                  bytes(l->channel, l->channel_len),
                  bytes(owner, owner_len),
                  num(window_s, wait_window_ms),
                  str(ONE_MAY_GO),
                  str(PUBLISH)};
    redisReply *reply = NULL;
    rl_error ignored;
    if (run(l, RL_SCRIPT_FAIR_CANCEL, 4, args, 8, 1, NULL, NULL, &reply, &ignored) == RL_OK)
        freeReplyObject(reply);
}

rl_status rl_lock_call_release(rl_lock *l, const char *field, size_t field_len, int64_t lease_ms,
                               const char *request_id, int sync, redisReply **reply,
                               rl_error *err) {
    rl_client *c = l->client;
    char lease_s[24], latch_ttl_s[24], now_s[24];
    size_t latch_len = l->latch_prefix_len + 2 * RL_REQUEST_ID_BYTES, keys_len = 0;
    char *latch = malloc(latch_len); /* per call: threads may release through one lock at once */
    char *keys = l->kind == RL_LOCK_READ ? rl_lock_read_keys(l, field, field_len, &keys_len) : NULL;
    if (!latch || (l->kind == RL_LOCK_READ && !keys)) {
        free(latch);
        free(keys);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    memcpy(latch, l->latch_prefix, l->latch_prefix_len);
    memcpy(latch + l->latch_prefix_len, request_id, 2 * RL_REQUEST_ID_BYTES);
    arg name = bytes(l->name, l->name_len), channel = bytes(l->channel, l->channel_len),
        latch_key = bytes(latch, latch_len), owner = bytes(field, field_len),
        lease = num(lease_s, lease_ms), latch_ttl = num(latch_ttl_s, c->cfg.options.latch_ttl_ms),
        publish = str(PUBLISH);
    /* The latch is deleted once the answer is in; nothing waits for that reply. */
    const char *del_argv[2] = {"DEL", latch};
    size_t del_lens[2] = {3, latch_len};
    rl_cmd delete_latch = {2, del_argv, del_lens};
    rl_reply_test wrote = sync ? reply_is_integer : NULL;
    rl_status st;
    switch (l->kind) {
    case RL_LOCK_FAIR: {
        arg args[] = {name,
                      bytes(l->queue_key, l->queue_key_len),
                      bytes(l->deadlines_key, l->deadlines_key_len),
                      channel,
                      latch_key,
                      str(ONE_MAY_GO),
                      lease,
                      owner,
                      num(now_s, rl_epoch_ms()),
                      publish,
                      latch_ttl};
        st = run(l, RL_SCRIPT_FAIR_RELEASE, 5, args, 11, 1, &delete_latch, wrote, reply, err);
        break;
    }
    case RL_LOCK_READ: {
        arg args[] = {name,
                      channel,
                      bytes(keys, keys_len),
                      bytes(l->key_base, l->key_base_len),
                      latch_key,
                      str(ONE_MAY_GO),
                      owner,
                      publish,
                      latch_ttl};
        st = run(l, RL_SCRIPT_READ_RELEASE, 5, args, 9, 1, &delete_latch, wrote, reply, err);
        break;
    }
    case RL_LOCK_WRITE: {
        arg args[] = {name, channel, latch_key, str(ALL_MAY_GO), lease, owner, publish, latch_ttl};
        st = run(l, RL_SCRIPT_WRITE_RELEASE, 3, args, 8, 1, &delete_latch, wrote, reply, err);
        break;
    }
    default: {
        arg args[] = {name, channel, latch_key, str(ONE_MAY_GO), lease, owner, latch_ttl, publish};
        st = run(l, RL_SCRIPT_RELEASE, 3, args, 8, 1, &delete_latch, wrote, reply, err);
        break;
    }
    }
    free(latch);
    free(keys);
    return st;
}

rl_status rl_lock_call_release_fully(rl_lock *l, const char *field, size_t field_len,
                                     int64_t lease_ms, int *still_held, rl_error *err) {
    *still_held = 0;
    for (int i = 0; i < RL_RELEASE_FULLY_MAX; i++) {
        char request_id[2 * RL_REQUEST_ID_BYTES + 1];
        rl_random_hex(request_id, RL_REQUEST_ID_BYTES);
        redisReply *reply = NULL;
        rl_status st =
            rl_lock_call_release(l, field, field_len, lease_ms, request_id, 0, &reply, err);
        if (st != RL_OK) return st;
        int held = reply->type == REDIS_REPLY_INTEGER && reply->integer == 0;
        freeReplyObject(reply);
        if (!held) return RL_OK;
        (*still_held)++;
    }
    return rl_fail(err, RL_ERR_SERVER, "still held after %d releases", RL_RELEASE_FULLY_MAX);
}

rl_status rl_lock_call_force_unlock(rl_lock *l, int *deleted, rl_error *err) {
    char now_s[24];
    arg name = bytes(l->name, l->name_len), channel = bytes(l->channel, l->channel_len),
        publish = str(PUBLISH);
    redisReply *reply = NULL;
    rl_status st;
    switch (l->kind) {
    case RL_LOCK_FAIR: {
        arg args[] = {name,
                      bytes(l->queue_key, l->queue_key_len),
                      bytes(l->deadlines_key, l->deadlines_key_len),
                      channel,
                      str(ONE_MAY_GO),
                      publish,
                      num(now_s, rl_epoch_ms())};
        st = run(l, RL_SCRIPT_FAIR_FORCE_UNLOCK, 4, args, 7, 0, NULL, reply_is_one, &reply, err);
        break;
    }
    case RL_LOCK_READ:
    case RL_LOCK_WRITE: {
        int read = l->kind == RL_LOCK_READ;
        arg args[] = {name, channel, str(read ? "read" : "write"),
                      str(read ? ONE_MAY_GO : ALL_MAY_GO), publish};
        st = run(l, RL_SCRIPT_RW_FORCE_UNLOCK, 2, args, 5, 0, NULL, reply_is_one, &reply, err);
        break;
    }
    default: {
        arg args[] = {name, channel, str(ONE_MAY_GO), publish};
        st = run(l, RL_SCRIPT_FORCE_UNLOCK, 2, args, 4, 0, NULL, reply_is_one, &reply, err);
        break;
    }
    }
    if (st == RL_OK || st == RL_ERR_REPLICA) {
        *deleted = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
    }
    return st;
}
