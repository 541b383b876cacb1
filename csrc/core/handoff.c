/* Hand-off of a hold to another thread or process (redis-py's token=): the token is the hold's
 * owner field in Redis, "<client id>:<context>" (":write" on a write lock). Only a holder is
 * given one (rl_lock_hand_off checks the hold table); a release with it is a release of that
 * owner's field, which Redis answers "not held" for a made-up owner or one that has gone. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "lock.h"
#include "names.h"
#include "random.h"

rl_status rl_lock_hand_off(rl_lock *l, uint64_t context, char token[RL_TOKEN_MAX], rl_error *err) {
    rl_error_clear(err);
    if (!l || !token) return rl_fail(err, RL_ERR_ARGUMENT, "lock and token must not be NULL");
    token[0] = '\0';
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    char shown[RL_NAME_SHOWN_MAX];
    rl_name_shown(l->name, l->name_len, shown);
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    if (!h || h->count <= 0) {
        st = rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context", shown);
    } else if (h->lost) {
        st = rl_fail_lost(err, h->lost, " while held", shown);
    } else if (h->release_failed || rl_hold_owner_len(&c->holds, h) >= RL_TOKEN_MAX) {
        st = rl_fail(err, RL_ERR_ARGUMENT, "lock \"%s\" has a release pending: release it first",
                     shown);
    } else {
        /* No renewal may follow: the new holder decides when it ends. */
        h->releasing = 1;
        rl_watchdog_wait_out_round(c, h);
        char owner[RL_OWNER_MAX];
        size_t owner_len = rl_hold_owner(&c->holds, h, owner);
        memcpy(token, owner, owner_len + 1);
        rl_holds_remove(&c->holds, h);
    }
    pthread_mutex_unlock(&c->mu);
    rl_client_leave(c);
    return st;
}

/* "<36-char UUID>:<digits>", plus ":write" exactly when the lock is a write lock. */
static int token_fits(const rl_lock *l, const char *token, size_t len) {
    static const char suffix[] = ":write";
    size_t suffix_len = sizeof suffix - 1;
    int write = l->kind == RL_LOCK_WRITE;
    if (write) {
        if (len < suffix_len || memcmp(token + len - suffix_len, suffix, suffix_len) != 0) return 0;
        len -= suffix_len;
    }
    if (len < 38 || len >= RL_TOKEN_MAX || token[36] != ':') return 0;
    for (size_t i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? token[i] != '-' : !isxdigit((unsigned char)token[i])) return 0;
    }
    for (size_t i = 37; i < len; i++)
        if (!isdigit((unsigned char)token[i])) return 0;
    return 1;
}

rl_status rl_lock_release_token(rl_lock *l, const char *token, rl_error *err) {
    rl_error_clear(err);
    if (!l || !token) return rl_fail(err, RL_ERR_ARGUMENT, "lock and token must not be NULL");
    size_t len = strnlen(token, RL_TOKEN_MAX);
    if (!token_fits(l, token, len))
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "not a hand-off token of a %s lock (\"<client id>:<context>%s\")",
                       l->kind == RL_LOCK_WRITE ? "write" : "non-write",
                       l->kind == RL_LOCK_WRITE ? ":write" : "");
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    char request_id[2 * RL_REQUEST_ID_BYTES + 1], shown[RL_NAME_SHOWN_MAX];
    rl_random_hex(request_id, RL_REQUEST_ID_BYTES);
    int64_t lease = c->cfg.options.watchdog_timeout_ms; /* kept only while holds remain */
    redisReply *reply = NULL;
    st = rl_lock_call_release(l, token, len, lease, request_id, 0, 1, &reply, err);
    if (st == RL_ERR_REPLICA) { /* released on the master all the same */
        rl_error_clear(err);
        st = RL_OK;
    }
    if (st == RL_OK) {
        int still_held = reply->type == REDIS_REPLY_INTEGER && reply->integer == 0;
        int not_held = reply->type == REDIS_REPLY_NIL;
        freeReplyObject(reply);
        if (not_held)
            st = rl_fail(err, RL_NOT_OWNED,
                         "lock \"%s\" is not held by the token's owner (released already, "
                         "expired, or not a token of this lock)",
                         rl_name_shown(l->name, l->name_len, shown));
        else if (still_held) /* the owner had re-entered it: every hold of the token goes */
            st = rl_lock_call_release_fully(l, token, len, lease, &(int){0}, err);
    }
    rl_client_leave(c);
    return st;
}
