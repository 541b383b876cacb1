/* The family's async calls: a semaphore's, a permit-expirable semaphore's and a latch's waits
 * woken by pub/sub with no thread per waiter, their timeouts and messages, cancellation that
 * leaves nothing taken, and one-step calls run on the workers. */
#include <stdio.h>
#include <string.h>

#include "async_kit.h"
#include "family_kit.h"
#include "harness.h"

static int count_threads(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

TEST(async_semaphore_waiters_are_woken_by_releases_without_a_thread_each) {
    rl_client *c = new_client(g_server.url, 0), *other = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "asem"), *mine = new_semaphore(other, "asem");
    CHECK_OK(rl_semaphore_try_set_permits(mine, 2, NULL, err));
    CHECK_OK(rl_semaphore_acquire(mine, 2, 0, NULL, NULL, err));
    enum { N = 20 };
    static outcome outs[N];
    static rl_call *calls[N];
    int threads_before = count_threads();
    for (int i = 0; i < N; i++) {
        outcome_init(&outs[i]);
        CHECK_OK(
            rl_semaphore_acquire_async(s, 1, RL_WAIT_FOREVER, record, &outs[i], &calls[i], err));
    }
    CHECK_SOON(subscribers("redisson_sc:{asem}") == 1, 2000);
    CHECK(count_threads() <= threads_before + 4 + 1); /* the workers, the subscriber: no more */
    sleep_ms(100);
    int done = 0;
    for (int i = 0; i < N; i++)
        done += is_done(&outs[i]);
    CHECK_INT(done, 0);
    CHECK_OK(rl_semaphore_release(mine, 2, err)); /* two permits: two waiters get one each */
    CHECK_SOON(rl_semaphore_held(s) == 2, 5000);
    sleep_ms(100);
    done = 0;
    for (int i = 0; i < N; i++)
        done += is_done(&outs[i]) && outs[i].status == RL_OK;
    CHECK_INT(done, 2);
    CHECK_INT(raw_int(g_raw, "GET asem"), 0);
    for (int i = 0; i < N; i++) /* the others: cancelled, nothing taken */
        rl_call_cancel(calls[i]);
    for (int i = 0; i < N; i++) {
        int st = wait_outcome(&outs[i]);
        CHECK(st == RL_OK || st == RL_ABORTED);
        rl_call_free(calls[i]);
        outcome_destroy(&outs[i]);
    }
    CHECK_INT(rl_semaphore_held(s), 2);
    CHECK_OK(rl_semaphore_release(s, 2, err));
    CHECK_INT(raw_int(g_raw, "GET asem"), 2);
    CHECK_SOON(subscribers("redisson_sc:{asem}") == 0, 2000);
    rl_semaphore_free(s);
    rl_semaphore_free(mine);
    rl_client_free(c);
    rl_client_free(other);
}

TEST(async_semaphore_times_out_in_the_users_words) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "never-set");
    outcome o;
    outcome_init(&o);
    rl_call *call;
    int64_t start = now_ms();
    CHECK_OK(rl_semaphore_acquire_async(s, 1, 150, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_NOT_ACQUIRED);
    CHECK(o.at - start >= 140);
    CHECK_MSG(strstr(o.message, "semaphore \"never-set\" has no permits (it does not exist)"), "%s",
              o.message);
    rl_call_free(call);
    outcome_destroy(&o);
    CHECK_OK(rl_semaphore_try_set_permits(s, 0, NULL, err));
    outcome_init(&o);
    CHECK_OK(rl_semaphore_acquire_async(s, 1, 0, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(o.message, "1 permit(s) not free now"), "%s", o.message);
    rl_call_free(call);
    outcome_destroy(&o);
    CHECK_STATUS(rl_semaphore_acquire_async(s, -1, 0, record, &o, &call, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_semaphore_acquire_async(s, 1, -7, record, &o, &call, err), RL_ERR_ARGUMENT);
    CHECK(call == NULL);
    rl_semaphore_free(s);
    rl_client_free(c);
}

/* Cancels right after starting, over and over: whatever the cancel meets (the first try in
 * flight, the wait, a try that got the permit), no permit stays taken. */
TEST(async_semaphore_cancelled_at_any_point_leaves_no_permit_taken) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "cancel-sem");
    CHECK_OK(rl_semaphore_try_set_permits(s, 1, NULL, err));
    int got = 0, aborted = 0;
    for (int i = 0; i < 200; i++) {
        outcome o;
        outcome_init(&o);
        rl_call *call;
        CHECK_OK(rl_semaphore_acquire_async(s, 1, 1000, record, &o, &call, err));
        if (i % 3) sleep_ms(i % 2);
        rl_call_cancel(call);
        int st = wait_outcome(&o);
        CHECK(st == RL_OK || st == RL_ABORTED);
        if (st == RL_OK) {
            got++;
            CHECK_OK(rl_semaphore_release(s, 1, err));
        } else {
            aborted++;
        }
        rl_call_free(call);
        outcome_destroy(&o);
        CHECK_INT(rl_semaphore_held(s), 0);
        CHECK_INT(raw_int(g_raw, "GET cancel-sem"), 1);
    }
    printf("    (%d done first, %d cancelled)\n", got, aborted);
    CHECK(aborted > 0);
    rl_semaphore_free(s);
    rl_client_free(c);
}

TEST(async_permit_is_woken_by_a_release_and_cancelled_leaves_none) {
    rl_client *c = new_client(g_server.url, 0);
    rl_expirable *s = new_expirable(c, "apes");
    CHECK_OK(rl_expirable_try_set_permits(s, 1, NULL, err));
    char held[RL_PERMIT_ID_LEN + 1], id[RL_PERMIT_ID_LEN + 1];
    CHECK_OK(rl_expirable_acquire(s, 10000, 0, NULL, NULL, held, err));
    outcome o;
    outcome_init(&o);
    rl_call *call;
    CHECK_OK(rl_expirable_acquire_async(s, RL_LEASE_WATCHDOG, 5000, id, record, &o, &call, err));
    sleep_ms(100);
    CHECK(!is_done(&o));
    CHECK_OK(rl_expirable_release(s, held, err));
    CHECK_INT(wait_outcome(&o), RL_OK);
    CHECK_INT(strlen(id), RL_PERMIT_ID_LEN);
    CHECK_OK(rl_expirable_release(s, id, err)); /* watched and released like a blocking one */
    rl_call_free(call);
    outcome_destroy(&o);
    int aborted = 0;
    for (int i = 0; i < 100; i++) {
        outcome_init(&o);
        CHECK_OK(rl_expirable_acquire_async(s, 10000, 1000, id, record, &o, &call, err));
        if (i % 2) sleep_ms(1);
        rl_call_cancel(call);
        int st = wait_outcome(&o);
        CHECK(st == RL_OK || st == RL_ABORTED);
        if (st == RL_OK) CHECK_OK(rl_expirable_release(s, id, err));
        aborted += st == RL_ABORTED;
        rl_call_free(call);
        outcome_destroy(&o);
        int64_t free_now = 0;
        CHECK_OK(rl_expirable_available(s, &free_now, err));
        CHECK_INT(free_now, 1);
    }
    CHECK(aborted > 0);
    rl_expirable_free(s);
    rl_client_free(c);
}

TEST(async_latch_waiters_all_wake_at_zero) {
    rl_client *c = new_client(g_server.url, 0);
    rl_countdown *l = new_countdown(c, "alatch");
    int set = 0;
    CHECK_OK(rl_countdown_try_set_count(l, 2, &set, err));
    enum { N = 5 };
    outcome outs[N];
    rl_call *calls[N];
    for (int i = 0; i < N; i++) {
        outcome_init(&outs[i]);
        CHECK_OK(rl_countdown_wait_async(l, 5000, record, &outs[i], &calls[i], err));
    }
    CHECK_SOON(subscribers("redisson_countdownlatch__channel__{alatch}") == 1, 2000);
    CHECK_OK(rl_countdown_count_down(l, err));
    sleep_ms(100);
    for (int i = 0; i < N; i++)
        CHECK(!is_done(&outs[i]));
    CHECK_OK(rl_countdown_count_down(l, err)); /* zero: every waiter, not one */
    for (int i = 0; i < N; i++) {
        CHECK_INT(wait_outcome(&outs[i]), RL_OK);
        rl_call_free(calls[i]);
        outcome_destroy(&outs[i]);
    }
    outcome o;
    outcome_init(&o);
    rl_call *call;
    CHECK_OK(rl_countdown_try_set_count(l, 1, &set, err));
    CHECK_OK(rl_countdown_wait_async(l, 100, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(o.message, "did not reach 0 within 0.100 s"), "%s", o.message);
    rl_call_free(call);
    outcome_destroy(&o);
    rl_countdown_free(l);
    rl_client_free(c);
}

static rl_status release_two(void *arg, int64_t *value, rl_error *err) {
    *value = 2;
    return rl_semaphore_release(arg, 2, err);
}

TEST(async_one_step_calls_run_on_the_workers) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "onestep");
    CHECK_OK(rl_semaphore_try_set_permits(s, 2, NULL, err));
    CHECK_OK(rl_semaphore_acquire(s, 2, 0, NULL, NULL, err));
    outcome o;
    outcome_init(&o);
    rl_call *call;
    CHECK_OK(rl_client_run_async(c, release_two, s, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_OK);
    CHECK_INT(o.value, 2);
    rl_call_free(call);
    outcome_destroy(&o);
    outcome_init(&o);
    CHECK_OK(rl_client_run_async(c, release_two, s, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_NOT_OWNED); /* a failure is reported as the call's */
    CHECK_MSG(strstr(o.message, "this client holds 0"), "%s", o.message);
    rl_call_free(call);
    outcome_destroy(&o);
    rl_semaphore_free(s);
    rl_client_free(c);
    CHECK_STATUS(rl_client_run_async(NULL, release_two, NULL, record, &o, &call, err),
                 RL_ERR_ARGUMENT);
}

TEST(async_family_waits_end_when_the_client_closes) {
    rl_client *c = new_client(g_server.url, 0);
    rl_semaphore *s = new_semaphore(c, "closing");
    rl_countdown *l = new_countdown(c, "closing-latch");
    CHECK_OK(rl_countdown_try_set_count(l, 1, NULL, err));
    outcome a, b;
    outcome_init(&a);
    outcome_init(&b);
    rl_call *ca, *cb;
    CHECK_OK(rl_semaphore_acquire_async(s, 1, RL_WAIT_FOREVER, record, &a, &ca, err));
    CHECK_OK(rl_countdown_wait_async(l, RL_WAIT_FOREVER, record, &b, &cb, err));
    sleep_ms(100);
    rl_client_free(c); /* the objects keep its memory; its threads stop */
    CHECK_INT(wait_outcome(&a), RL_ERR_CLOSED);
    CHECK_INT(wait_outcome(&b), RL_ERR_CLOSED);
    rl_call_free(ca);
    rl_call_free(cb);
    outcome_destroy(&a);
    outcome_destroy(&b);
    CHECK_STATUS(rl_semaphore_acquire_async(s, 1, 0, record, &a, &ca, err), RL_ERR_CLOSED);
    rl_semaphore_free(s);
    rl_countdown_free(l);
}

static rl_acquire_options waiting_for(int64_t wait_ms) {
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.wait_ms = wait_ms;
    return o;
}

TEST(async_multilock_waits_for_its_last_lock_and_ends_cleanly) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *locks[2] = {new_lock(c, "am:1"), new_lock(c, "am:2")};
    rl_multilock *m;
    CHECK_OK(rl_multilock_new(locks, 2, &m, err));
    uint64_t me = rl_context_new(), other = rl_context_new();
    rl_acquire_options now = waiting_for(0), forever = waiting_for(RL_WAIT_FOREVER);
    CHECK_OK(rl_lock_acquire_with(locks[1], other, &now, err));
    outcome o;
    outcome_init(&o);
    rl_call *call;
    CHECK_OK(rl_multilock_acquire_async(m, me, &forever, record, &o, &call, err));
    sleep_ms(300);
    CHECK(!is_done(&o));
    CHECK_OK(rl_lock_release(locks[1], other, err));
    CHECK_INT(wait_outcome(&o), RL_OK);
    CHECK_INT(rl_multilock_held(m, me), 2);
    CHECK_OK(rl_multilock_release(m, me, err));
    CHECK_INT(raw_int(g_raw, "EXISTS am:1"), 0);
    rl_call_free(call);
    outcome_destroy(&o);
    /* a wait that runs out leaves nothing held */
    CHECK_OK(rl_lock_acquire_with(locks[1], other, &now, err));
    rl_acquire_options briefly = waiting_for(200);
    outcome_init(&o);
    CHECK_OK(rl_multilock_acquire_async(m, me, &briefly, record, &o, &call, err));
    CHECK_INT(wait_outcome(&o), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(o.message, "multi-lock not acquired"), "%s", o.message);
    CHECK_INT(rl_multilock_held(m, me), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS am:1"), 0);
    rl_call_free(call);
    outcome_destroy(&o);
    /* a waiting one cancelled: nothing held */
    outcome_init(&o);
    CHECK_OK(rl_multilock_acquire_async(m, me, &forever, record, &o, &call, err));
    sleep_ms(100);
    rl_call_cancel(call);
    CHECK_INT(wait_outcome(&o), RL_ABORTED);
    CHECK_INT(rl_multilock_held(m, me), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS am:1"), 0);
    rl_call_free(call);
    outcome_destroy(&o);
    CHECK_OK(rl_lock_release(locks[1], other, err));
    CHECK_STATUS(rl_multilock_acquire_async(m, me, NULL, record, &o, &call, err), RL_ERR_ARGUMENT);
    rl_multilock_free(m);
    rl_lock_free(locks[0]);
    rl_lock_free(locks[1]);
    rl_client_free(c);
}

TEST(async_multilock_cancelled_at_any_point_leaves_nothing_held) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *locks[3] = {new_lock(c, "amc:1"), new_lock(c, "amc:2"), new_lock(c, "amc:3")};
    rl_multilock *m;
    CHECK_OK(rl_multilock_new(locks, 3, &m, err));
    rl_acquire_options wait = waiting_for(1000);
    int got = 0, aborted = 0;
    for (int i = 0; i < 150; i++) {
        uint64_t me = rl_context_new();
        outcome o;
        outcome_init(&o);
        rl_call *call;
        CHECK_OK(rl_multilock_acquire_async(m, me, &wait, record, &o, &call, err));
        if (i % 3) sleep_ms(i % 4);
        rl_call_cancel(call);
        int st = wait_outcome(&o);
        CHECK(st == RL_OK || st == RL_ABORTED);
        if (st == RL_OK) {
            got++;
            CHECK_OK(rl_multilock_release(m, me, err));
        } else {
            aborted++;
        }
        rl_call_free(call);
        outcome_destroy(&o);
        CHECK_INT(rl_multilock_held(m, me), 0);
        CHECK_INT(raw_int(g_raw, "EXISTS amc:1") + raw_int(g_raw, "EXISTS amc:2") +
                      raw_int(g_raw, "EXISTS amc:3"),
                  0);
    }
    printf("    (%d done first, %d cancelled)\n", got, aborted);
    CHECK(aborted > 0);
    rl_multilock_free(m);
    for (int i = 0; i < 3; i++)
        rl_lock_free(locks[i]);
    rl_client_free(c);
}
