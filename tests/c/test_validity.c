/* A hold's validity on the holder's clock and its states (validity.c): held, in doubt when a
 * renewal fails, held again when one is confirmed, lost past the deadline; and the deadline is
 * never later than the lease Redis really keeps. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* valid_until (sampled at t1) against the truth: the key's expiry, PTTL read at t2 >= t1. */
static int within_truth(rl_lock *l, int64_t *valid_until, long long *expires_at) {
    int64_t t1 = now_ms();
    rl_hold_state st = rl_lock_state(l, 1, valid_until);
    long long pttl = raw_int(g_raw, "PTTL %s", "v:truth");
    int64_t t2 = now_ms();
    *expires_at = t2 + pttl;
    (void)t1;
    return st == RL_HOLD_HELD && *valid_until > 0 && *valid_until <= *expires_at;
}

TEST(valid_until_is_the_sent_time_plus_the_lease_less_the_margin) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "v:fixed");
    int64_t until = -1;
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_NONE);
    CHECK_INT(until, 0);
    int64_t before = rl_monotonic_ms();
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    int64_t after = rl_monotonic_ms();
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_HELD);
    /* margin: 1% of 10 s + 2 ms */
    CHECK_MSG(until >= before + 10000 - 102 && until <= after + 10000 - 102,
              "valid until %lld, acquire sent between %lld and %lld", (long long)until,
              (long long)before, (long long)after);
    CHECK_INT(rl_lock_valid_until(l, 1), until);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_NONE);
    CHECK_INT(rl_lock_valid_until(l, 1), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(fixed_lease_hold_is_in_doubt_within_the_margin_then_lost) {
    rl_options o;
    rl_options_init(&o);
    o.drift_factor_ppm = 500000; /* a margin of half the lease, to see the in-doubt stretch */
    rl_client *c;
    CHECK_OK(rl_client_new(g_server.url, &o, &c, err));
    rl_lock *l = new_lock(c, "v:margin");
    CHECK_OK(rl_lock_acquire(l, 1, 600, 0, NULL, NULL, err));
    int64_t until;
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_HELD);
    sleep_ms(400); /* past 600 - 302 ms */
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_IN_DOUBT);
    CHECK_INT(until, 0);
    sleep_ms(300); /* past the lease */
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_LOST);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(bad_drift_factor_is_refused) {
    rl_options o;
    rl_options_init(&o);
    rl_client *c = NULL;
    o.drift_factor_ppm = -1;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    o.drift_factor_ppm = 500001;
    CHECK_STATUS(rl_client_new(g_server.url, &o, &c, err), RL_ERR_ARGUMENT);
    CHECK(c == NULL);
}

TEST(valid_until_never_exceeds_the_lease_redis_keeps) {
    rl_client *c = new_client(g_server.url, 1500); /* renewed every 0.5 s */
    rl_lock *l = new_lock(c, "v:truth");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int64_t until = 0;
    long long expires = 0;
    for (int i = 0; i < 40; i++) { /* across several renewals */
        CHECK_MSG(within_truth(l, &until, &expires), "round %d: valid until %lld, expires at %lld",
                  i, (long long)until, expires);
        sleep_ms(50);
    }
    /* Renewals stalled: the server sleeps through a round. */
    redisContext *stall = stall_start(900);
    sleep_ms(600);
    rl_hold_state st = rl_lock_state(l, 1, &until);
    stall_end(stall);
    long long pttl = raw_int(g_raw, "PTTL v:truth");
    expires = now_ms() + pttl;
    CHECK_MSG(st != RL_HOLD_NONE && until <= expires,
              "during the stall: valid until %lld, expires at %lld", (long long)until, expires);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(paused_server_puts_a_hold_in_doubt_then_held_again) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    event_log log;
    event_log_init(&log);
    /* A 3 s lease renewed every second: a 1.8 s pause makes one round fail, not the lease. */
    rl_client *c = client_with(s.url, 3000, 1000, &log);
    rl_lock *l = new_lock(c, "v:doubt");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int64_t until;
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_HELD);
    int64_t paused_at = now_ms();
    kill(s.pid, SIGSTOP);
    CHECK_SOON(event_count(&log, RL_EVENT_IN_DOUBT) == 1, 2500);
    int64_t doubted_at = log.first_at[RL_EVENT_IN_DOUBT];
    rl_hold_state during = rl_lock_state(l, 1, &until);
    kill(s.pid, SIGCONT);
    CHECK_INT(during, RL_HOLD_IN_DOUBT);
    CHECK_MSG(until > doubted_at, "in doubt at %lld but guaranteed only until %lld",
              (long long)doubted_at, (long long)until);
    CHECK_SOON(event_count(&log, RL_EVENT_CONFIRMED) == 1, 2500);
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_HELD);
    CHECK_INT(event_count(&log, RL_EVENT_LOST), 0);
    rl_stats stats;
    rl_client_stats(c, &stats);
    CHECK_INT(stats.in_doubt, 0);
    CHECK_INT(stats.in_doubt_total, 1);
    printf("    paused at 0 ms: in doubt at +%lld ms, held again at +%lld ms\n",
           (long long)(doubted_at - paused_at),
           (long long)(log.first_at[RL_EVENT_CONFIRMED] - paused_at));
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
    server_stop(&s);
}

TEST(paused_server_past_the_deadline_reports_in_doubt_then_lost) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(s.url, 1500, 500, &log);
    rl_lock *l = new_lock(c, "v:lost");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int64_t until = rl_lock_valid_until(l, 1);
    int64_t paused_at = now_ms();
    kill(s.pid, SIGSTOP);
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 4000);
    kill(s.pid, SIGCONT);
    int64_t doubted_at = log.first_at[RL_EVENT_IN_DOUBT], lost_at = log.first_at[RL_EVENT_LOST];
    CHECK_MSG(doubted_at > 0 && doubted_at < lost_at, "in doubt at %lld, lost at %lld",
              (long long)doubted_at, (long long)lost_at);
    int64_t last_valid = 0;
    CHECK_INT(rl_lock_state(l, 1, &last_valid), RL_HOLD_LOST);
    CHECK_INT(last_valid, 0);
    CHECK_INT(event_count(&log, RL_EVENT_CONFIRMED), 0);
    printf("    paused at 0 ms: in doubt at +%lld ms, lost at +%lld ms (guaranteed until +%lld ms "
           "at the last confirmation before the pause)\n",
           (long long)(doubted_at - paused_at), (long long)(lost_at - paused_at),
           (long long)(until - paused_at));
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
    server_stop(&s);
}

TEST(check_guards_a_critical_write) {
    rl_options o;
    rl_options_init(&o);
    o.drift_factor_ppm = 0; /* the margin is 2 ms: the lease alone decides */
    rl_client *c;
    CHECK_OK(rl_client_new(g_server.url, &o, &c, err));
    rl_lock *l = new_lock(c, "v:check");
    int64_t left = -1;
    CHECK_STATUS(rl_lock_check(l, 1, 0, &left, err), RL_NOT_OWNED);
    CHECK_OK(rl_lock_acquire(l, 1, 800, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_check(l, 1, 500, &left, err));
    CHECK_MSG(left > 500 && left <= 800, "left %lld", (long long)left);
    CHECK_STATUS(rl_lock_check(l, 1, 900, &left, err), RL_IN_DOUBT);
    CHECK_STATUS(rl_lock_check(l, 1, -1, &left, err), RL_ERR_ARGUMENT);
    sleep_ms(850);
    rl_error e;
    CHECK_INT(rl_lock_check(l, 1, 0, &left, &e), RL_LOST);
    CHECK_INT(e.lost_reason, RL_LOST_EXPIRED);
    CHECK_INT(left, 0);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A grant whose answer comes after the lease it granted has ended, by the client's clock (here
 * Redis sleeps while the acquire waits in its queue; a process paused between sending and
 * reading is the same): another owner may hold the lock by then, so it is given back and not
 * reported acquired. A 100 ms fixed lease, so that a 0.4 s stall outlasts it (with the default
 * watchdog lease it would take a 30 s stall). */
TEST(a_grant_answered_after_its_lease_ended_is_given_back) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "v:late");
    redisContext *stall = stall_start(400);
    rl_error e;
    CHECK_INT(rl_lock_acquire(l, 1, 100, 0, NULL, NULL, &e), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "after the lease it granted had ended") != NULL, "%s", e.message);
    CHECK_INT(raw_int(g_raw, "EXISTS v:late"), 0); /* given back at once, not left to expire */
    stall_end(stall);
    CHECK_INT(rl_lock_state(l, 1, NULL), RL_HOLD_NONE);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A waiting acquire whose grant came late tries again at once, and gets the lock in time. */
TEST(a_waiting_acquire_whose_grant_came_late_tries_again) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "v:late-wait");
    redisContext *stall = stall_start(400);
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err)); /* a lease the stall does not end */
    CHECK_OK(rl_lock_release(l, 1, err));
    stall_end(stall);
    stall = stall_start(400);
    int64_t until = 0;
    CHECK_OK(rl_lock_acquire(l, 1, 100, 3000, NULL, NULL, err));
    CHECK_INT(rl_lock_state(l, 1, &until), RL_HOLD_HELD); /* the second grant, answered at once */
    stall_end(stall);
    rl_lock_release(l, 1, NULL); /* (its 100 ms lease may have ended by now) */
    rl_lock_free(l);
    rl_client_free(c);
}
