/* Fixed-lease holds, as redis-py's Lock offers them: extend (more lease) and reacquire (the
 * hold's lease again from now). Watchdog-mode holds are refused: the watchdog keeps their lease.
 * One call of the renewal script (renew_lua) sets the lease only where this owner still holds
 * the lock, so neither can revive a hold that is gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "extend.h"
#include "names.h"
#include "validity.h"

/* The renewal script's answer for one key: 1 renewed, 0 gone, 2 held by others; -1 unreadable. */
static int renew_answer(const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return -1;
    return (int)r->element[0]->integer;
}

rl_status rl_lock_set_lease(rl_lock *l, uint64_t context, int64_t lease_ms, int adopt,
                            const char *what, rl_error *err) {
    rl_client *c = l->client;
    char owner[RL_OWNER_MAX], lease_text[24], shown[RL_NAME_SHOWN_MAX];
    rl_name_shown(l->name, l->name_len, shown);
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    int held = h && h->count > 0;
    char *read_keys = held ? malloc(h->read_keys_len + 1) : NULL;
    size_t owner_len = 0, read_keys_len = held ? h->read_keys_len : 0;
    if (read_keys) {
        owner_len = rl_hold_owner(&c->holds, h, owner);
        memcpy(read_keys, rl_hold_read_keys(h), read_keys_len);
    }
    pthread_mutex_unlock(&c->mu);
    if (!held) return rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context", shown);
    if (!read_keys) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    int lease_len = snprintf(lease_text, sizeof lease_text, "%lld", (long long)lease_ms);
    const char *argv[RL_SCRIPT_ARGV_HEAD + 4] = {
        [2] = "1", [3] = l->name, [4] = lease_text, [5] = owner, [6] = read_keys};
    size_t lens[RL_SCRIPT_ARGV_HEAD + 4] = {
        [2] = 1, [3] = l->name_len, [4] = (size_t)lease_len, [5] = owner_len, [6] = read_keys_len};
    redisReply *reply = NULL;
    int64_t sent_at = rl_now_ms();
    rl_status st = rl_client_script(c, RL_SCRIPT_RENEW, RL_SCRIPT_ARGV_HEAD + 4, argv, lens, &reply,
                                    1, NULL, NULL, err);
    free(read_keys);
    if (st != RL_OK) return st;
    int answer = renew_answer(reply);
    freeReplyObject(reply);
    if (answer < 0) return rl_fail(err, RL_ERR_SERVER, "unexpected answer to a lease change");
    pthread_mutex_lock(&c->mu);
    h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    rl_lost_reason reason = answer == 2                              ? RL_LOST_OWNER_CHANGED
                            : h && rl_now_ms() >= h->confirmed_until ? RL_LOST_EXPIRED
                                                                     : RL_LOST_DELETED;
    if (answer == 1 && h && !h->lost) {
        if (adopt && !h->watchdog) h->lease_ms = lease_ms;
        rl_hold_confirmed(c, h, sent_at, lease_ms);
    } else {
        if (h && h->count > 0) {
            rl_client_hold_lost(c, h, reason);
            reason = h->lost;
        }
        st = rl_fail_lost(err, reason, what, shown);
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* The hold's fixed lease (> 0), or a refusal: not held, lost, or in watchdog mode. */
static rl_status fixed_lease_of(rl_lock *l, uint64_t context, int64_t *lease_ms, rl_error *err) {
    rl_client *c = l->client;
    char shown[RL_NAME_SHOWN_MAX];
    rl_name_shown(l->name, l->name_len, shown);
    rl_status st = RL_OK;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    if (!h || h->count <= 0)
        st = rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context", shown);
    else if (h->lost)
        st = rl_fail_lost(err, h->lost, " while held", shown);
    else if (h->watchdog)
        st = rl_fail(err, RL_ERR_ARGUMENT,
                     "lock \"%s\" is held in watchdog mode, which renews its lease itself: "
                     "extend and reacquire are for holds taken with a fixed lease",
                     shown);
    else
        *lease_ms = h->lease_ms;
    pthread_mutex_unlock(&c->mu);
    return st;
}

static rl_status pttl(rl_lock *l, int64_t *out, rl_error *err) {
    return rl_lock_query(l, RL_QUERY_REMAINING, 0, out, err);
}

rl_status rl_lock_extend(rl_lock *l, uint64_t context, int64_t add_ms, int replace, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    if (add_ms <= 0 || add_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "an extension must be from 1 ms to 2^40 ms");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    int64_t lease = 0, left = 0;
    st = fixed_lease_of(l, context, &lease, err);
    /* Added to what is left: read just before, so the new end is late by at most a round trip. */
    if (st == RL_OK && !replace) st = pttl(l, &left, err);
    if (st == RL_OK) {
        lease = add_ms + (left > 0 ? left : 0);
        if (lease > RL_MAX_LEASE_MS) lease = RL_MAX_LEASE_MS;
        st = rl_lock_set_lease(l, context, lease, 0, " before it was extended", err);
    }
    rl_client_leave(l->client);
    return st;
}

rl_status rl_lock_reacquire(rl_lock *l, uint64_t context, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    int64_t lease = 0;
    st = fixed_lease_of(l, context, &lease, err);
    if (st == RL_OK) st = rl_lock_set_lease(l, context, lease, 0, " before it was reacquired", err);
    rl_client_leave(l->client);
    return st;
}
