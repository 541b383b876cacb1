/* Fencing that the storage checks (docs/semantics.md): the fence a forced release advances, the
 * fenced write to a Redis key, and the cleanup of a name's fencing counter. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

TEST(fenced_force_unlock_advances_the_fence) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FENCED, "ledger"),
            *lb = new_kind(b, RL_LOCK_FENCED, "ledger");
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    CHECK_INT(rl_lock_token(la, 1), 1);
    int deleted = 0;
    CHECK_OK(rl_lock_force_unlock(lb, &deleted, err));
    CHECK_INT(deleted, 1);
    /* The evicted holder's token 1 is behind the fence at once, before anyone acquires. */
    CHECK_INT(raw_int(g_raw, "GET redisson_lock_token:{ledger}"), 2);
    CHECK_INT(raw_int(g_raw, "PTTL redisson_lock_token:{ledger}"), -1);
    /* A forced release of a free lock advances it too: a holder whose lease ran out while it
     * was paused is fenced off the same way. */
    CHECK_OK(rl_lock_force_unlock(lb, &deleted, err));
    CHECK_INT(deleted, 0);
    CHECK_INT(raw_int(g_raw, "GET redisson_lock_token:{ledger}"), 3);
    CHECK_OK(rl_lock_acquire(lb, 1, 10000, 0, NULL, NULL, err));
    CHECK_INT(rl_lock_token(lb, 1), 4);
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(fenced_set_refuses_a_token_older_than_the_last_write) {
    rl_client *c = new_client(g_server.url, 0);
    int written = -1;
    int64_t fence = -1;
    CHECK_OK(rl_fenced_set(c, "acct", 4, "five", 4, 5, &written, &fence, err));
    CHECK_INT(written, 1);
    CHECK_INT(fence, 0);
    CHECK_OK(rl_fenced_set(c, "acct", 4, "seven", 5, 7, &written, &fence, err));
    CHECK_INT(written, 1);
    CHECK_INT(fence, 5);
    CHECK_OK(rl_fenced_set(c, "acct", 4, "stale", 5, 6, &written, &fence, err));
    CHECK_INT(written, 0);
    CHECK_INT(fence, 7);
    redisReply *r = raw(g_raw, "GET acct");
    CHECK(r->type == REDIS_REPLY_STRING && strcmp(r->str, "seven") == 0);
    freeReplyObject(r);
    /* The same hold writes again with its token. */
    CHECK_OK(rl_fenced_set(c, "acct", 4, "seven again", 11, 7, &written, &fence, err));
    CHECK_INT(written, 1);
    CHECK_INT(raw_int(g_raw, "GET redlease_fence:{acct}"), 7);
    CHECK_INT(raw_int(g_raw, "PTTL redlease_fence:{acct}"), -1);
    rl_client_free(c);
}

TEST(fenced_set_checks_its_input) {
    rl_client *c = new_client(g_server.url, 0);
    int written = -1;
    CHECK_STATUS(rl_fenced_set(c, "acct", 4, "v", 1, 0, &written, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_fenced_set(c, "acct", 4, "v", 1, -3, &written, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_fenced_set(c, "", 0, "v", 1, 1, &written, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_fenced_set(c, NULL, 4, "v", 1, 1, &written, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_fenced_set(c, "acct", 4, NULL, 1, 1, &written, NULL, err), RL_ERR_ARGUMENT);
    /* A fence that is not a token is not overwritten, nor is the key. */
    freeReplyObject(raw(g_raw, "SET redlease_fence:{acct} not-a-number"));
    rl_error e;
    CHECK_INT(rl_fenced_set(c, "acct", 4, "v", 1, 1, &written, NULL, &e), RL_ERR_SERVER);
    CHECK_MSG(strstr(e.message, "not a fencing token") != NULL, "%s", e.message);
    CHECK_INT(raw_int(g_raw, "EXISTS acct"), 0);
    rl_client_free(c);
}

TEST(fence_drop_deletes_a_free_names_counter_only) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_kind(c, RL_LOCK_FENCED, "{t}drop");
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    int64_t dropped = 0;
    CHECK_OK(rl_fence_drop(c, "{t}drop", 7, &dropped, err));
    CHECK_INT(dropped, -1); /* held: its holder's token must stay fenced */
    CHECK_INT(raw_int(g_raw, "GET redisson_lock_token:{t}drop"), 2);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_fence_drop(c, "{t}drop", 7, &dropped, err));
    CHECK_INT(dropped, 2);
    CHECK_INT(raw_int(g_raw, "EXISTS redisson_lock_token:{t}drop"), 0);
    CHECK_OK(rl_fence_drop(c, "{t}drop", 7, &dropped, err));
    CHECK_INT(dropped, 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* docs/protocol.md, "The token's growth": what a lost counter does. Tokens start again at 1, and
 * a store that kept a greater fence refuses the new holder (it must be reset with the counter). */
TEST(fenced_counter_lost_restarts_tokens_and_the_store_refuses_them) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_kind(c, RL_LOCK_FENCED, "lost-counter");
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
    }
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    int written = 0;
    CHECK_OK(rl_fenced_set(c, "lc", 2, "v4", 2, rl_lock_token(l, 1), &written, NULL, err));
    CHECK_INT(written, 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "DEL redisson_lock_token:{lost-counter}"), 1);
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    CHECK_INT(rl_lock_token(l, 1), 1);
    int64_t fence = 0;
    CHECK_OK(rl_fenced_set(c, "lc", 2, "v1", 2, rl_lock_token(l, 1), &written, &fence, err));
    CHECK_INT(written, 0);
    CHECK_INT(fence, 4);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}
