/* The Redis calls of a lock, dispatched to its kind (kinds/), and what their answers mean for
 * the flow in lock.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kind.h"
#include "names.h"
#include "random.h"

static int reply_is_integer(const redisReply *r) {
    return r->type == REDIS_REPLY_INTEGER;
}

/* ---- keys and fields ----------------------------------------------------------------------- */

rl_lock *rl_lock_alloc(rl_lock_kind kind, const void *name, size_t name_len) {
    const char *prefix = rl_kind_of(kind)->channel_prefix;
    size_t channel_len = rl_name_prefixed_len(prefix, name, name_len);
    rl_lock *l = calloc(1, sizeof *l + name_len + 1 + channel_len + 1);
    if (!l) return NULL;
    l->kind = kind;
    memcpy(l->name, name, name_len);
    l->name_len = name_len;
    l->channel = l->name + name_len + 1;
    l->channel_len = rl_name_prefixed_into(prefix, name, name_len, l->channel);
    return l;
}

char *rl_lock_key(const rl_lock *l, const char *prefix, size_t *len) {
    return rl_name_prefixed(prefix, l->name, l->name_len, 0, len);
}

char *rl_lock_key_base(const rl_lock *l, size_t *len) {
    if (memchr(l->name, '{', l->name_len)) return rl_joined(l->name, l->name_len, "", 0, NULL, len);
    return rl_joined("{", 1, l->name, l->name_len, "}", len);
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
    char *base = rl_lock_key_base(l, len);
    if (!base) return NULL;
    char *prefix = rl_joined(base, *len, ":", 1, NULL, len);
    free(base);
    if (!prefix) return NULL;
    char *keys = rl_joined(prefix, *len, owner, owner_len, ":rwlock_timeout", len);
    free(prefix);
    return keys;
}

char *rl_lock_wait_channel(const rl_lock *l, const char *owner, size_t owner_len, size_t *len) {
    if (l->kind != RL_LOCK_FAIR) return rl_joined(l->channel, l->channel_len, "", 0, NULL, len);
    char *prefix = rl_joined(l->channel, l->channel_len, ":", 1, NULL, len);
    if (!prefix) return NULL;
    char *channel = rl_joined(prefix, *len, owner, owner_len, NULL, len);
    free(prefix);
    return channel;
}

/* ---- the calls ----------------------------------------------------------------------------- */

void rl_lock_call_undo_acquire(rl_lock *l, const char *owner, size_t owner_len, int64_t lease) {
    char field[RL_OWNER_MAX], request_id[2 * RL_REQUEST_ID_BYTES + 1];
    size_t field_len = rl_lock_field(l, owner, owner_len, field);
    rl_random_hex(request_id, RL_REQUEST_ID_BYTES);
    redisReply *reply = NULL;
    rl_error ignored;
    if (rl_lock_call_release(l, field, field_len, lease, request_id, 0, 0, &reply, &ignored) ==
        RL_OK)
        freeReplyObject(reply);
}

rl_status rl_lock_call_acquire(rl_lock *l, const char *owner, size_t owner_len, int64_t lease_ms,
                               int queue, int64_t wait_window_ms, int64_t *wait_hint_ms,
                               int64_t *token, int *reentered, rl_error *err) {
    rl_acquire_args a = {owner, owner_len, lease_ms, queue, wait_window_ms};
    redisReply *reply = NULL;
    rl_status st = rl_kind_of(l->kind)->acquire(l, &a, &reply, err);
    if (st == RL_ERR_REPLICA) {
        freeReplyObject(reply);
        rl_lock_call_undo_acquire(l, owner, owner_len, lease_ms);
        return st;
    }
    if (st != RL_OK) return st;
    return rl_lock_acquire_answer(l, owner, owner_len, lease_ms, queue, wait_window_ms, reply,
                                  wait_hint_ms, token, reentered, err);
}

rl_status rl_lock_acquire_answer(rl_lock *l, const char *owner, size_t owner_len, int64_t lease_ms,
                                 int queue, int64_t wait_window_ms, redisReply *reply,
                                 int64_t *wait_hint_ms, int64_t *token, int *reentered,
                                 rl_error *err) {
    rl_acquire_args a = {owner, owner_len, lease_ms, queue, wait_window_ms};
    rl_status st;
    *wait_hint_ms = -1;
    *reentered = rl_reply_is_reentered(reply);
    rl_acquire_answer own = {0, 0, -1, -1};
    const rl_kind *k = rl_kind_of(l->kind);
    if (k->read_answer && k->read_answer(&a, reply, &own)) {
        *reentered = own.reentered;
        *wait_hint_ms = own.wait_hint_ms;
        if (own.acquired) *token = own.token;
        st = own.acquired ? RL_OK : RL_NOT_ACQUIRED;
    } else if (rl_reply_is_acquired(reply)) {
        st = RL_OK;
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        *wait_hint_ms = reply->integer;
        st = RL_NOT_ACQUIRED;
    } else {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to acquire (type %d)", reply->type);
    }
    freeReplyObject(reply);
    return st;
}

void rl_lock_call_leave_queue(rl_lock *l, const char *owner, size_t owner_len,
                              int64_t wait_window_ms) {
    const rl_kind *k = rl_kind_of(l->kind);
    if (k->leave_queue) k->leave_queue(l, owner, owner_len, wait_window_ms);
}

rl_status rl_lock_call_release(rl_lock *l, const char *field, size_t field_len, int64_t lease_ms,
                               const char *request_id, int retried, int sync, redisReply **reply,
                               rl_error *err) {
    /* prefix("redisson_unlock_latch", name) + ":" + request id; per call: threads may release
     * through one lock at once */
    size_t latch_len;
    char *latch = rl_name_prefixed("redisson_unlock_latch", l->name, l->name_len,
                                   1 + 2 * RL_REQUEST_ID_BYTES, &latch_len);
    if (!latch) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    latch[latch_len++] = ':';
    memcpy(latch + latch_len, request_id, 2 * RL_REQUEST_ID_BYTES);
    latch_len += 2 * RL_REQUEST_ID_BYTES;
    /* The latch is deleted once the answer is in (nothing waits for that reply), unless an
     * earlier attempt was lost on the network: a copy of it may still reach Redis. */
    const char *del_argv[2] = {"DEL", latch};
    size_t del_lens[2] = {3, latch_len};
    rl_cmd delete_latch = {2, del_argv, del_lens};
    rl_release_args a = {field,
                         field_len,
                         lease_ms,
                         latch,
                         latch_len,
                         retried ? NULL : &delete_latch,
                         sync ? reply_is_integer : NULL};
    rl_status st = rl_kind_of(l->kind)->release(l, &a, reply, err);
    free(latch);
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
            rl_lock_call_release(l, field, field_len, lease_ms, request_id, 0, 0, &reply, err);
        if (st != RL_OK) return st;
        int held = reply->type == REDIS_REPLY_INTEGER && reply->integer == 0;
        freeReplyObject(reply);
        if (!held) return RL_OK;
        (*still_held)++;
    }
    return rl_fail(err, RL_ERR_SERVER, "still held after %d releases", RL_RELEASE_FULLY_MAX);
}

rl_status rl_lock_call_force_unlock(rl_lock *l, int *deleted, rl_error *err) {
    redisReply *reply = NULL;
    rl_status st = rl_kind_of(l->kind)->force_unlock(l, &reply, err);
    if (st == RL_OK || st == RL_ERR_REPLICA) {
        *deleted = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
    }
    return st;
}
