/* The watchdog: keeps watchdog-mode holds alive, in batches, stops with the release, and reports
 * holds that Redis says are gone. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "watchdog.h"

TEST(watchdog_keeps_a_hold_alive_and_stops_at_release) {
    rl_client *c = new_client(g_server.url, 600);
    rl_lock *l = new_lock(c, "wd");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    long long pttl = raw_int(g_raw, "PTTL wd");
    CHECK_MSG(pttl > 500 && pttl <= 600, "pttl %lld", pttl);
    for (int i = 0; i < 10; i++) { /* 2 s: more than 3 leases */
        sleep_ms(200);
        pttl = raw_int(g_raw, "PTTL wd");
        CHECK_MSG(pttl > 0, "hold expired after %d ms", (i + 1) * 200);
    }
    rl_stats st;
    rl_client_stats(c, &st);
    CHECK_MSG(st.renew_rounds >= 6, "only %llu renewal rounds in 2 s",
              (unsigned long long)st.renew_rounds);
    CHECK(st.watchdog_running);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_client_stats(c, &st);
    uint64_t renewed_at_release = st.renewed_holds;
    CHECK_INT(raw_int(g_raw, "EXISTS wd"), 0);
    sleep_ms(700); /* three renewal periods: nothing renewed, and the thread stops */
    rl_client_stats(c, &st);
    CHECK_INT(st.renewed_holds, renewed_at_release);
    CHECK_INT(st.watchdog_running, 0);
    CHECK_INT(raw_int(g_raw, "EXISTS wd"), 0);
    /* A new hold starts it again. */
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(900);
    CHECK(raw_int(g_raw, "PTTL wd") > 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(fixed_lease_is_not_renewed) {
    rl_client *c = new_client(g_server.url, 600);
    rl_lock *l = new_lock(c, "fixed");
    CHECK_OK(rl_lock_acquire(l, 1, 300, 0, NULL, NULL, err));
    sleep_ms(500);
    CHECK_INT(raw_int(g_raw, "EXISTS fixed"), 0);
    rl_stats st;
    rl_client_stats(c, &st);
    CHECK_INT(st.renewed_holds, 0);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(thousand_holds_renewed_in_batches) {
    enum { HOLDS = 1000 };
    rl_client *c = new_client(g_server.url, 600);
    static rl_lock *locks[HOLDS];
    char name[32];
    for (int i = 0; i < HOLDS; i++) {
        int n = snprintf(name, sizeof name, "many:%d", i);
        CHECK_OK(rl_lock_new(c, name, (size_t)n, &locks[i], err));
        CHECK_OK(rl_lock_acquire(locks[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    }
    rl_stats before, after;
    rl_client_stats(c, &before);
    sleep_ms(1500); /* 2.5 leases: every hold must have been renewed */
    rl_client_stats(c, &after);
    uint64_t rounds = after.renew_rounds - before.renew_rounds;
    uint64_t trips = after.renew_round_trips - before.renew_round_trips;
    CHECK_MSG(rounds >= 4, "%llu rounds", (unsigned long long)rounds);
    CHECK_INT(after.last_round_holds, HOLDS);
    CHECK_INT(after.renewed_holds - before.renewed_holds, rounds * HOLDS);
    /* One round trip per round, plus one SCRIPT LOAD the first time. */
    CHECK_MSG(trips <= rounds + 1, "%llu round trips for %llu rounds", (unsigned long long)trips,
              (unsigned long long)rounds);
    printf("    %d holds: %llu rounds, %llu round trips, %llu script calls\n", HOLDS,
           (unsigned long long)rounds, (unsigned long long)trips,
           (unsigned long long)(after.renew_calls - before.renew_calls));
    for (int i = 0; i < HOLDS; i++) {
        int n = snprintf(name, sizeof name, "many:%d", i);
        redisReply *r = raw(g_raw, "PTTL %b", name, (size_t)n);
        long long pttl = r->integer;
        freeReplyObject(r);
        CHECK_MSG(pttl > 0, "%s expired", name);
    }
    for (int i = 0; i < HOLDS; i++) {
        CHECK_OK(rl_lock_release(locks[i], 1, err));
        rl_lock_free(locks[i]);
    }
    CHECK_INT(lock_keys(), 0);
    rl_client_free(c);
}

/* A round over more holds than one exchange carries (rl_watchdog_slice_holds, 50,000; 100
 * here) renews them in several exchanges, each with the command timeout to itself: a round over
 * a million holds had one exchange for all, which Redis could not answer within the command
 * timeout, so every round failed and the holds were lost (the benchmark's million-hold row:
 * 995,146 lost of 1,000,000). */
TEST(watchdog_round_goes_in_slices_of_holds) {
    enum { HOLDS = 1000, SLICE = 100 };
    size_t saved = rl_watchdog_slice_holds;
    rl_watchdog_slice_holds = SLICE;
    rl_client *c = new_client(g_server.url, 600);
    static rl_lock *locks[HOLDS];
    char name[32];
    for (int i = 0; i < HOLDS; i++) {
        int n = snprintf(name, sizeof name, "slices:%d", i);
        CHECK_OK(rl_lock_new(c, name, (size_t)n, &locks[i], err));
        CHECK_OK(rl_lock_acquire(locks[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    }
    rl_stats before, after;
    rl_client_stats(c, &before);
    sleep_ms(1500); /* 2.5 leases: every hold must have been renewed */
    rl_client_stats(c, &after);
    uint64_t rounds = after.renew_rounds - before.renew_rounds;
    uint64_t trips = after.renew_round_trips - before.renew_round_trips;
    CHECK_MSG(rounds >= 3, "%llu rounds", (unsigned long long)rounds);
    CHECK_INT(after.renewed_holds - before.renewed_holds, rounds * HOLDS);
    CHECK_INT(after.renew_failed_rounds - before.renew_failed_rounds, 0);
    /* one exchange per slice of 100 holds (a round in flight at either end may add one) */
    CHECK_MSG(trips >= rounds * (HOLDS / SLICE) && trips <= (rounds + 1) * (HOLDS / SLICE) + 1,
              "%llu round trips for %llu rounds", (unsigned long long)trips,
              (unsigned long long)rounds);
    for (int i = 0; i < HOLDS; i++) {
        CHECK(!rl_lock_lost(locks[i], 1, NULL));
        CHECK_OK(rl_lock_release(locks[i], 1, err));
        rl_lock_free(locks[i]);
    }
    CHECK_INT(lock_keys(), 0);
    rl_client_free(c);
    rl_watchdog_slice_holds = saved; /* its watchdog thread, which reads it, has stopped */
}

/* Collects lost-lock events. */
typedef struct lost_log {
    pthread_mutex_t mu;
    int count;
    rl_lost_reason reason;
    char name[64];
    uint64_t context;
    pthread_t thread;
} lost_log;

static void record_event(const rl_event *ev, void *userdata) {
    lost_log *log = userdata;
    if (ev->kind != RL_EVENT_LOST) return;
    pthread_mutex_lock(&log->mu);
    log->count++;
    log->reason = ev->reason;
    log->context = ev->context;
    log->thread = pthread_self();
    snprintf(log->name, sizeof log->name, "%.*s", (int)ev->name_len, ev->name);
    pthread_mutex_unlock(&log->mu);
}

static rl_client *client_with_log_max_hold(lost_log *log, int64_t max_hold_ms) {
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
    rl_options o;
    rl_options_init(&o);
    o.watchdog_timeout_ms = 600;
    o.max_hold_ms = max_hold_ms;
    o.on_event = record_event;
    o.event_userdata = log;
    rl_client *c;
    rl_error e;
    if (rl_client_new(g_server.url, &o, &c, &e) != RL_OK) return NULL;
    return c;
}

static rl_client *client_with_log(lost_log *log) {
    return client_with_log_max_hold(log, 0);
}

static int lost_count(lost_log *log) {
    pthread_mutex_lock(&log->mu);
    int n = log->count;
    pthread_mutex_unlock(&log->mu);
    return n;
}

TEST(deleted_key_is_reported_lost) {
    lost_log log;
    rl_client *c = client_with_log(&log);
    CHECK(c);
    rl_lock *l = new_lock(c, "gone");
    CHECK_OK(rl_lock_acquire(l, 9, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int64_t t0 = now_ms();
    freeReplyObject(raw(g_raw, "DEL gone"));
    while (lost_count(&log) == 0 && now_ms() - t0 < 3000)
        sleep_ms(10);
    int64_t took = now_ms() - t0;
    CHECK_INT(lost_count(&log), 1);
    CHECK_MSG(took < 200 + 300, "reported after %lld ms (period 200 ms)", (long long)took);
    CHECK_INT(log.reason, RL_LOST_DELETED);
    CHECK(strcmp(log.name, "gone") == 0 && log.context == 9);
    CHECK(!pthread_equal(log.thread, pthread_self()));
    rl_lost_reason reason;
    CHECK(rl_lock_lost(l, 9, &reason) && reason == RL_LOST_DELETED);
    rl_error lost_err;
    CHECK_INT(rl_lock_acquire(l, 9, RL_LEASE_WATCHDOG, 0, NULL, NULL, &lost_err), RL_LOST);
    CHECK_INT(lost_err.lost_reason, RL_LOST_DELETED);
    CHECK_INT(rl_lock_release(l, 9, &lost_err), RL_LOST);
    CHECK_INT(lost_err.lost_reason, RL_LOST_DELETED);
    CHECK(!rl_lock_lost(l, 9, NULL));
    CHECK_OK(rl_lock_acquire(l, 9, RL_LEASE_WATCHDOG, 0, NULL, NULL, err)); /* usable again */
    CHECK_OK(rl_lock_release(l, 9, err));
    CHECK_INT(lost_count(&log), 1);
    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

/* queue_events (the Lua binding's mode): no thread calls back; the loss waits in the queue and
 * is delivered on the thread that takes it, once. */
TEST(queued_events_wait_for_the_host_to_take_them) {
    lost_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.mu, NULL);
    rl_options o;
    rl_options_init(&o);
    o.watchdog_timeout_ms = 600;
    o.queue_events = 1;
    rl_client *c;
    CHECK_OK(rl_client_new(g_server.url, &o, &c, err));
    rl_lock *l = new_lock(c, "queued");
    CHECK_OK(rl_lock_acquire(l, 4, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    freeReplyObject(raw(g_raw, "DEL queued"));
    int64_t t0 = now_ms();
    while (!rl_lock_lost(l, 4, NULL) && now_ms() - t0 < 3000)
        sleep_ms(10);
    CHECK(rl_lock_lost(l, 4, NULL));
    sleep_ms(50);
    CHECK_INT(lost_count(&log), 0); /* nobody was called back meanwhile */
    size_t taken = rl_client_take_events(c, record_event, &log);
    CHECK_MSG(taken >= 1, "%zu events", taken);
    CHECK_INT(lost_count(&log), 1);
    CHECK(strcmp(log.name, "queued") == 0 && log.context == 4 && log.reason == RL_LOST_DELETED);
    CHECK(pthread_equal(log.thread, pthread_self()));
    CHECK_INT(rl_client_take_events(c, record_event, &log), 0); /* delivered once */
    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

TEST(taken_over_key_is_reported_owner_changed) {
    lost_log log;
    rl_client *c = client_with_log(&log), *thief = new_client(g_server.url, 0);
    CHECK(c);
    rl_lock *l = new_lock(c, "taken");
    rl_lock *lt = new_lock(thief, "taken");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_force_unlock(lt, NULL, err));
    CHECK_OK(rl_lock_acquire(lt, 1, 10000, 0, NULL, NULL, err));
    int64_t t0 = now_ms();
    while (lost_count(&log) == 0 && now_ms() - t0 < 3000)
        sleep_ms(10);
    CHECK_INT(lost_count(&log), 1);
    CHECK_INT(log.reason, RL_LOST_OWNER_CHANGED);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    int64_t count;
    CHECK_OK(rl_lock_hold_count(lt, 1, &count, err)); /* the new holder is untouched */
    CHECK_INT(count, 1);
    CHECK_OK(rl_lock_release(lt, 1, err));
    rl_lock_free(l);
    rl_lock_free(lt);
    rl_client_free(c);
    rl_client_free(thief);
    pthread_mutex_destroy(&log.mu);
}

/* max_hold: renewed until then, then reported lost and left to expire. */
static void check_max_hold(rl_client *c, lost_log *log, rl_lock *l, int64_t max_hold) {
    int64_t t0 = now_ms();
    while (lost_count(log) == 0 && now_ms() - t0 < 5000) {
        CHECK_MSG(raw_int(g_raw, "PTTL capped") > 0, "expired before max_hold");
        sleep_ms(10);
    }
    int64_t took = now_ms() - t0;
    CHECK_INT(lost_count(log), 1);
    CHECK_INT(log->reason, RL_LOST_MAX_HOLD);
    /* renewed past one lease (600 ms), reported within one period (200 ms) of max_hold */
    CHECK_MSG(took >= max_hold - 50 && took < max_hold + 200 + 300, "lost after %lld ms",
              (long long)took);
    while (raw_int(g_raw, "EXISTS capped") && now_ms() - t0 < max_hold + 600 + 500)
        sleep_ms(10);
    CHECK_INT(raw_int(g_raw, "EXISTS capped"), 0); /* no longer renewed: expired */
    rl_error lost_err;
    CHECK_INT(rl_lock_release(l, 1, &lost_err), RL_LOST);
    CHECK_INT(lost_err.lost_reason, RL_LOST_MAX_HOLD);
    (void)c;
}

TEST(max_hold_per_acquire_stops_renewal_and_reports) {
    lost_log log;
    rl_client *c = client_with_log(&log);
    CHECK(c);
    rl_lock *l = new_lock(c, "capped");
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.wait_ms = 0;
    o.max_hold_ms = 1000;
    CHECK_OK(rl_lock_acquire_with(l, 1, &o, err));
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err)); /* reentry: same cap */
    check_max_hold(c, &log, l, 1000);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST); /* the second hold, lost with the first */
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err)); /* no cap now */
    sleep_ms(1300);
    CHECK(raw_int(g_raw, "PTTL capped") > 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

TEST(max_hold_client_default_and_override) {
    lost_log log;
    rl_client *c = client_with_log_max_hold(&log, 900);
    CHECK(c);
    rl_lock *l = new_lock(c, "capped");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    check_max_hold(c, &log, l, 900);
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.max_hold_ms = RL_MAX_HOLD_NONE;
    CHECK_OK(rl_lock_acquire_with(l, 1, &o, err));
    sleep_ms(1300);
    CHECK(raw_int(g_raw, "PTTL capped") > 0);
    CHECK_INT(lost_count(&log), 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    o.max_hold_ms = -5;
    CHECK_STATUS(rl_lock_acquire_with(l, 1, &o, err), RL_ERR_ARGUMENT);
    rl_options bad;
    rl_options_init(&bad);
    bad.max_hold_ms = -1;
    rl_client *none = NULL;
    CHECK_STATUS(rl_client_new(g_server.url, &bad, &none, err), RL_ERR_ARGUMENT);
    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}
