/* Failover detection (identity.c): each renewal round learns which server answers; a hold renewed
 * by another server than the one that renewed it before goes in doubt and is verified by that
 * answer. A restart stands in for a failover: a new process has a new replication id, as a
 * promoted replica does. */
#include "harness.h"

/* A client of its own server, with a 3 s watchdog lease (a round each second): the lease outlives
 * the restart, so what the new server holds is what the last SAVE wrote. */
static rl_client *renewed_once(test_server *s, event_log *log, rl_lock **l, const char *name) {
    event_log_init(log);
    rl_client *c = client_with(s->url, 3000, 0, log);
    if (!c) return NULL;
    *l = new_lock(c, name);
    rl_error e;
    if (rl_lock_acquire(*l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e) != RL_OK) return c;
    int64_t until = now_ms() + 3000;
    while (event_count(log, RL_EVENT_RENEWED) < 1 && now_ms() < until)
        sleep_ms(10);
    return c;
}

TEST(a_new_server_without_the_hold_reports_it_lost_to_a_failover) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    event_log log;
    rl_lock *l = NULL;
    rl_client *c = renewed_once(&s, &log, &l, "moved:gone");
    CHECK(c && l);
    CHECK(event_count(&log, RL_EVENT_RENEWED) >= 1); /* the hold knows its server */
    CHECK(server_restart(&s, 0) == 0);               /* a new server, without the data */
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 4000);
    CHECK_INT(log.reason, RL_LOST_FAILOVER);
    rl_lost_reason reason;
    CHECK(rl_lock_lost(l, 1, &reason) && reason == RL_LOST_FAILOVER);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
    server_stop(&s);
}

TEST(a_new_server_with_the_hold_keeps_it_after_a_doubt) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    event_log log;
    rl_lock *l = NULL;
    rl_client *c = renewed_once(&s, &log, &l, "moved:kept");
    CHECK(c && l);
    CHECK_INT(event_count(&log, RL_EVENT_IN_DOUBT), 0);
    CHECK(server_restart(&s, 1) == 0); /* a new server, with the hold as SAVE wrote it */
    CHECK_SOON(event_count(&log, RL_EVENT_CONFIRMED) >= 1, 4000);
    CHECK(event_count(&log, RL_EVENT_IN_DOUBT) >= 1);
    CHECK_INT(event_count(&log, RL_EVENT_LOST), 0);
    int64_t valid_until;
    CHECK_INT(rl_lock_state(l, 1, &valid_until), RL_HOLD_HELD);
    /* Renewed by the new server from now on: no more doubt over the next rounds. */
    int doubts = event_count(&log, RL_EVENT_IN_DOUBT);
    int rounds = event_count(&log, RL_EVENT_RENEWED);
    CHECK_SOON(event_count(&log, RL_EVENT_RENEWED) >= rounds + 2, 4000);
    CHECK_INT(event_count(&log, RL_EVENT_IN_DOUBT), doubts);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
    server_stop(&s);
}

TEST(the_same_server_round_after_round_raises_no_doubt) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 600, 0, &log); /* a round every 200 ms */
    CHECK(c);
    rl_lock *l = new_lock(c, "moved:never");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_SOON(event_count(&log, RL_EVENT_RENEWED) >= 5, 4000);
    CHECK_INT(event_count(&log, RL_EVENT_IN_DOUBT), 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
}

/* A hold taken and not yet renewed knows its server from the acquire (the connection's deferred
 * INFO): a new server before its first round is a failover too, not a plain deletion. A 9 s
 * lease: the first round is 3 s away, well after the restart. */
TEST(a_hold_not_yet_renewed_knows_its_server_from_the_acquire) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(s.url, 9000, 0, &log);
    CHECK(c);
    rl_lock *gone = new_lock(c, "first:gone");
    CHECK_OK(rl_lock_acquire(gone, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int64_t taken = now_ms();
    CHECK(server_restart(&s, 0) == 0); /* a new server, without the data */
    CHECK(now_ms() - taken < 2500);    /* before the first round */
    CHECK_INT(event_count(&log, RL_EVENT_RENEWED), 0);
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 6000);
    CHECK_INT(log.reason, RL_LOST_FAILOVER);
    CHECK_STATUS(rl_lock_release(gone, 1, err), RL_LOST);
    rl_lock_free(gone);

    /* And one kept by the new server (restarted from a SAVE): in doubt, then held. */
    rl_lock *kept = new_lock(c, "first:kept");
    CHECK_OK(rl_lock_acquire(kept, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    int doubts = event_count(&log, RL_EVENT_IN_DOUBT);
    int rounds = event_count(&log, RL_EVENT_RENEWED);
    CHECK(server_restart(&s, 1) == 0);
    CHECK_SOON(event_count(&log, RL_EVENT_RENEWED) > rounds, 6000);
    CHECK(event_count(&log, RL_EVENT_IN_DOUBT) > doubts);
    int64_t valid_until;
    CHECK_INT(rl_lock_state(kept, 1, &valid_until), RL_HOLD_HELD);
    CHECK_OK(rl_lock_release(kept, 1, err));
    rl_lock_free(kept);
    rl_client_free(c);
    event_log_destroy(&log);
    server_stop(&s);
}
