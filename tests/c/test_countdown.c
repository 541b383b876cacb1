/* The count-down latch (Redisson's RCountDownLatch): its layout, every waiter woken at zero,
 * timeouts, deletion and bad input. */
#include <pthread.h>
#include <string.h>

#include "family_kit.h"

typedef struct latch_waiter {
    rl_countdown *latch;
    int64_t wait_ms;
    rl_status status;
    int64_t done_at;
} latch_waiter;

static void *latch_waiter_main(void *arg) {
    latch_waiter *w = arg;
    w->status = rl_countdown_wait(w->latch, w->wait_ms, NULL, NULL, NULL);
    w->done_at = now_ms();
    return NULL;
}

TEST(countdown_wakes_every_waiter_at_zero) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_countdown *la = new_countdown(a, "batch"), *lb = new_countdown(b, "batch");
    int set = -1;
    CHECK_OK(rl_countdown_try_set_count(la, 2, &set, err));
    CHECK_INT(set, 1);
    CHECK_INT(raw_int(g_raw, "GET batch"), 2);
    CHECK_OK(rl_countdown_try_set_count(la, 7, &set, err));
    CHECK_INT(set, 0);
    int64_t n = -1;
    CHECK_OK(rl_countdown_count(lb, &n, err));
    CHECK_INT(n, 2);
    CHECK_STATUS(rl_countdown_wait(lb, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    /* Three waiters of one client: the "0" message is for all of them, not one. */
    enum { N = 3 };
    latch_waiter ws[N];
    pthread_t ts[N];
    for (int i = 0; i < N; i++) {
        ws[i] = (latch_waiter){.latch = lb, .wait_ms = 10000};
        pthread_create(&ts[i], NULL, latch_waiter_main, &ws[i]);
    }
    CHECK_SOON(subscribers("redisson_countdownlatch__channel__{batch}") == 1, 2000);
    CHECK_OK(rl_countdown_count_down(la, err));
    sleep_ms(200);
    for (int i = 0; i < N; i++)
        CHECK_INT(ws[i].done_at, 0); /* 1 left: still waiting */
    int64_t zero_at = now_ms();
    CHECK_OK(rl_countdown_count_down(la, err));
    for (int i = 0; i < N; i++) {
        pthread_join(ts[i], NULL);
        CHECK_INT(ws[i].status, RL_OK);
        CHECK_MSG(ws[i].done_at - zero_at < 1000, "waiter %d woken after %lld ms", i,
                  (long long)(ws[i].done_at - zero_at));
    }
    CHECK_INT(raw_int(g_raw, "EXISTS batch"), 0);        /* deleted at zero */
    CHECK_OK(rl_countdown_wait(lb, 0, NULL, NULL, err)); /* no latch: nothing to wait for */
    CHECK_OK(rl_countdown_count_down(la, err));          /* no-op */
    CHECK_INT(raw_int(g_raw, "EXISTS batch"), 0);
    rl_countdown_free(la);
    rl_countdown_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(countdown_wait_times_out_and_delete_keeps_waiters_waiting) {
    rl_client *c = new_client(g_server.url, 0);
    rl_countdown *l = new_countdown(c, "{tag}stuck");
    CHECK_OK(rl_countdown_try_set_count(l, 1, NULL, err));
    int64_t t0 = now_ms();
    rl_error e;
    CHECK(rl_countdown_wait(l, 300, NULL, NULL, &e) == RL_NOT_ACQUIRED);
    int64_t waited = now_ms() - t0;
    CHECK_MSG(waited >= 290 && waited < 3000, "waited %lld ms", (long long)waited);
    CHECK_MSG(strstr(e.message, "did not reach 0"), "%s", e.message);
    /* The timed-out wait's UNSUBSCRIBE goes out after it returned: let it land first. */
    CHECK_SOON(subscribers("redisson_countdownlatch__channel__{{tag}stuck}") == 0, 2000);
    latch_waiter w = {.latch = l, .wait_ms = 800};
    pthread_t t;
    pthread_create(&t, NULL, latch_waiter_main, &w);
    CHECK_SOON(subscribers("redisson_countdownlatch__channel__{{tag}stuck}") == 1, 2000);
    int deleted = 0;
    CHECK_OK(rl_countdown_delete(l, &deleted, err));
    CHECK_INT(deleted, 1);
    pthread_join(t, NULL);
    /* A deletion says "new count" ("1"), as Redisson's; the count is 0 then, so the wait ends. */
    CHECK_INT(w.status, RL_OK);
    CHECK_OK(rl_countdown_delete(l, &deleted, err));
    CHECK_INT(deleted, 0);
    rl_countdown_free(l);
    rl_client_free(c);
}

TEST(countdown_bad_input_is_refused) {
    rl_client *c = new_client(g_server.url, 0);
    rl_countdown *l = NULL;
    CHECK_STATUS(rl_countdown_new(c, "", 0, &l, err), RL_ERR_ARGUMENT);
    l = new_countdown(c, "badlatch");
    CHECK_STATUS(rl_countdown_try_set_count(l, 0, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_countdown_try_set_count(l, -4, NULL, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_countdown_wait(l, -3, NULL, NULL, err), RL_ERR_ARGUMENT);
    CHECK_INT(raw_int(g_raw, "EXISTS badlatch"), 0);
    freeReplyObject(raw(g_raw, "HSET badlatch f 1"));
    CHECK_STATUS(rl_countdown_count_down(l, err), RL_ERR_SERVER); /* WRONGTYPE: not a latch */
    CHECK_INT(raw_int(g_raw, "HGET badlatch f"), 1);
    rl_countdown_free(l);
    rl_client_free(c);
}
