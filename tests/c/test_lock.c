/* The reentrant lock's Redis layout and semantics, per docs/protocol.md. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

TEST(layout_after_acquire) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "orders:42");
    CHECK_OK(rl_lock_acquire(l, 7, 10000, 0, NULL, NULL, err));
    redisReply *r = raw(g_raw, "HGETALL orders:42");
    char owner[64];
    snprintf(owner, sizeof owner, "%s:7", rl_client_id(c));
    CHECK_INT(r->elements, 2);
    CHECK_INT(strlen(rl_client_id(c)), 36);
    CHECK(strcmp(r->element[0]->str, owner) == 0);
    CHECK(strcmp(r->element[1]->str, "1") == 0);
    freeReplyObject(r);
    long long pttl = raw_int(g_raw, "PTTL orders:42");
    CHECK_MSG(pttl > 9000 && pttl <= 10000, "pttl %lld", pttl);
    CHECK_OK(rl_lock_release(l, 7, err));
    CHECK_INT(raw_int(g_raw, "EXISTS orders:42"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(reentrancy_counts_and_resets_ttl) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "re");
    int64_t count = -1;
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 0);
    for (int want = 1; want <= 2; want++) {
        CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
        CHECK_INT(count, want);
        CHECK_INT(rl_lock_local_holds(l, 1), want);
        long long pttl = raw_int(g_raw, "PTTL re");
        CHECK_MSG(pttl > 4900, "entry %d did not reset the lease: %lld", want, pttl);
        sleep_ms(250);
        CHECK(raw_int(g_raw, "PTTL re") < 4800);
    }
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 1);
    CHECK(raw_int(g_raw, "PTTL re") > 4900); /* release of an inner hold refreshes the lease */
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 0);
    CHECK_INT(raw_int(g_raw, "EXISTS re"), 0);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_NOT_OWNED);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(other_owner_cannot_release_or_enter) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la, *la2, *lb;
    CHECK_OK(rl_lock_new(a, "shared", 6, &la, err));
    CHECK_OK(rl_lock_new(a, "shared", 6, &la2, err));
    CHECK_OK(rl_lock_new(b, "shared", 6, &lb, err));
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    /* Another context of the same client, and the same context id of another client. */
    CHECK_STATUS(rl_lock_release(la2, 2, err), RL_NOT_OWNED);
    CHECK_STATUS(rl_lock_release(lb, 1, err), RL_NOT_OWNED);
    CHECK_STATUS(rl_lock_acquire(la2, 2, 10000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_STATUS(rl_lock_acquire(lb, 1, 10000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    int64_t count;
    CHECK_OK(rl_lock_hold_count(la, 1, &count, err));
    CHECK_INT(count, 1);
    int held = -1;
    CHECK_OK(rl_lock_is_held(lb, 1, &held, err));
    CHECK_INT(held, 0);
    CHECK_OK(rl_lock_is_held(la2, 1, &held, err)); /* same client, same context: held */
    CHECK_INT(held, 1);
    CHECK_OK(rl_lock_release(la2, 1, err)); /* a second lock object of the same owner may */
    CHECK_INT(raw_int(g_raw, "EXISTS shared"), 0);
    rl_lock_free(la);
    rl_lock_free(la2);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(release_after_expiry_is_refused_and_reported) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "short");
    rl_lock *lb = new_lock(b, "short");
    CHECK_OK(rl_lock_acquire(la, 1, 150, 0, NULL, NULL, err));
    sleep_ms(300);
    CHECK_OK(rl_lock_acquire(lb, 1, 10000, 0, NULL, NULL, err)); /* expired: b gets in */
    rl_error lost_err;
    CHECK_INT(rl_lock_release(la, 1, &lost_err), RL_LOST); /* a's hold is gone */
    CHECK_INT(lost_err.lost_reason, RL_LOST_EXPIRED);
    CHECK_INT(rl_lock_local_holds(la, 1), 0);
    int64_t count;
    CHECK_OK(rl_lock_hold_count(lb, 1, &count, err)); /* b untouched */
    CHECK_INT(count, 1);
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(force_unlock_is_locked_and_remaining) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "f");
    int locked = -1, deleted = -1;
    int64_t pttl = 0;
    CHECK_OK(rl_lock_is_locked(l, &locked, err));
    CHECK_INT(locked, 0);
    CHECK_OK(rl_lock_remaining(l, &pttl, err));
    CHECK_INT(pttl, -2);
    CHECK_OK(rl_lock_force_unlock(l, &deleted, err));
    CHECK_INT(deleted, 0);
    CHECK_OK(rl_lock_acquire(l, 3, 8000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_is_locked(l, &locked, err));
    CHECK_INT(locked, 1);
    CHECK_OK(rl_lock_remaining(l, &pttl, err));
    CHECK_MSG(pttl > 7000 && pttl <= 8000, "pttl %lld", (long long)pttl);
    CHECK_OK(rl_lock_force_unlock(l, &deleted, err));
    CHECK_INT(deleted, 1);
    CHECK_INT(raw_int(g_raw, "EXISTS f"), 0);
    CHECK_STATUS(rl_lock_release(l, 3, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(wrong_type_is_a_server_error_and_changes_nothing) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l;
    freeReplyObject(raw(g_raw, "SET notalock hello"));
    CHECK_OK(rl_lock_new(c, "notalock", 8, &l, err));
    CHECK_STATUS(rl_lock_acquire(l, 1, 1000, 0, NULL, NULL, err), RL_ERR_SERVER);
    int deleted = -1;
    CHECK_STATUS(rl_lock_force_unlock(l, &deleted, err), RL_ERR_SERVER); /* not a lock: kept */
    rl_error e;
    CHECK(rl_lock_acquire(l, 1, 1000, 0, NULL, NULL, &e) == RL_ERR_SERVER);
    /* The user's words: which name, what it holds, what redlease wanted; no script SHA. */
    CHECK_MSG(strstr(e.message, "\"notalock\" holds a value of another type (string); redlease "
                                "needs it for a lock"),
              "%s", e.message);
    CHECK_MSG(!strstr(e.message, "user_script") && !strstr(e.message, "f_"), "%s", e.message);
    redisReply *r = raw(g_raw, "GET notalock");
    CHECK(r->type == REDIS_REPLY_STRING && strcmp(r->str, "hello") == 0);
    freeReplyObject(r);
    CHECK_INT(raw_int(g_raw, "PTTL notalock"), -1);
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(bad_arguments_are_typed_errors) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = NULL;
    CHECK_STATUS(rl_lock_new(c, "", 0, &l, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_new(c, NULL, 3, &l, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_new(NULL, "x", 1, &l, err), RL_ERR_ARGUMENT);
    CHECK(l == NULL);
    CHECK_OK(rl_lock_new(c, "x", 1, &l, err));
    CHECK_STATUS(rl_lock_acquire(l, 1, 0, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_acquire(l, 1, -7, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_acquire(l, 1, RL_MAX_LEASE_MS + 1, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_acquire(l, 1, INT64_MAX, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_acquire(NULL, 1, 100, 0, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_lock_release(NULL, 1, err), RL_ERR_ARGUMENT);
    CHECK_INT(lock_keys(), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(binary_names_work) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l;
    const char name[] = {'a', 0, 'b', '{', 't', '}'};
    CHECK_OK(rl_lock_new(c, name, sizeof name, &l, err));
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    redisReply *r = raw(g_raw, "EXISTS %b", name, sizeof name);
    CHECK_INT(r->integer, 1);
    freeReplyObject(r);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(lock_keys(), 0);
    rl_lock_free(l);
    rl_client_free(c);
}
