/* When this client's view and Redis disagree: a release whose answer was lost, an acquire whose
 * answer was lost, a hold lost while an acquire was on the wire, a hold given up by max_hold,
 * and a context that ended while holding. Each must end with Redis holding exactly what the
 * client believes, and with every hold renewed or reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The owner field this client writes for context 1 of a reentrant lock. */
static void owner_field(rl_client *c, uint64_t context, char *out, size_t size) {
    snprintf(out, size, "%s:%llu", rl_client_id(c), (unsigned long long)context);
}

TEST(failed_release_then_acquire_is_renewed_and_never_answered_by_the_old_latch) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 1500, 300, &log), *other = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "settle");
    rl_lock *lo = new_lock(other, "settle");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    redisContext *stall = stall_start(1000);
    CHECK_STATUS(rl_lock_release(l, 1, err),
                 RL_ERR_CONNECTION); /* timed out: Redis does it later */
    stall_end(stall);
    CHECK_INT(raw_int(g_raw, "EXISTS settle"), 0); /* the release did happen */

    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    sleep_ms(2500); /* more than a lease (1.5 s): only renewals keep it */
    CHECK_STATUS(rl_lock_acquire(lo, 1, 5000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    char field[80];
    owner_field(c, 1, field, sizeof field);
    redisReply *r = raw(g_raw, "HGET settle %s", field);
    CHECK_MSG(r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0, "held %d times",
              r->type == REDIS_REPLY_STRING ? atoi(r->str) : 0);
    freeReplyObject(r);
    CHECK(!rl_lock_lost(l, 1, NULL));
    CHECK_INT(rl_lock_local_holds(l, 1), 1);
    CHECK_OK(rl_lock_release(l, 1, err)); /* a fresh release, not the old latch's answer */
    CHECK_INT(raw_int(g_raw, "EXISTS settle"), 0);
    CHECK_INT(event_count(&log, RL_EVENT_LOST), 0);
    rl_lock_free(l);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
    event_log_destroy(&log);
}

TEST(failed_inner_release_is_settled_by_the_next_acquire) {
    rl_client *c = client_with(g_server.url, 1500, 300, NULL);
    rl_lock *l = new_lock(c, "inner");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    redisContext *stall = stall_start(800);
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_ERR_CONNECTION);
    stall_end(stall);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_INT(rl_lock_local_holds(l, 1), 2);
    int64_t count = 0;
    CHECK_OK(rl_lock_hold_count(l, 1, &count, err));
    CHECK_INT(count, 2); /* the settled release counted once, the acquire once */
    sleep_ms(2000);      /* renewed again after the settled release */
    CHECK(raw_int(g_raw, "PTTL inner") > 0);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS inner"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(stray_holds_in_redis_are_removed_by_the_last_release) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 0, 0, &log), *other = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "stray");
    rl_lock *lo = new_lock(other, "stray");
    char field[80];
    owner_field(c, 1, field, sizeof field);
    /* As if an acquire's answer had been lost: Redis counts one hold the client does not know. */
    freeReplyObject(raw(g_raw, "HINCRBY stray %s 1", field));
    freeReplyObject(raw(g_raw, "PEXPIRE stray 30000"));
    for (int cycle = 0; cycle < 3; cycle++) {
        CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
        CHECK_INT(raw_int(g_raw, "EXISTS stray"), 0);
        CHECK_OK(rl_lock_acquire(lo, 1, 5000, 0, NULL, NULL, err)); /* others get in */
        CHECK_OK(rl_lock_release(lo, 1, err));
    }
    CHECK_SOON(event_count(&log, RL_EVENT_STRAY_HOLDS) == 1, 2000);
    CHECK_INT(event_count(&log, RL_EVENT_LOST), 0);
    rl_lock_free(l);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
    event_log_destroy(&log);
}

TEST(acquire_whose_answer_was_lost_leaves_no_stray_hold) {
    rl_client *c = client_with(g_server.url, 1500, 300, NULL), *other = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "lostreply");
    rl_lock *lo = new_lock(other, "lostreply");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err)); /* scripts loaded */
    CHECK_OK(rl_lock_release(l, 1, err));
    redisContext *stall = stall_start(800);
    CHECK_STATUS(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err), RL_ERR_CONNECTION);
    stall_end(stall); /* Redis ran the acquire: a hold the client does not know */
    CHECK_INT(raw_int(g_raw, "EXISTS lostreply"), 1);
    CHECK_INT(rl_lock_local_holds(l, 1), 0);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS lostreply"), 0);
    CHECK_OK(rl_lock_acquire(lo, 1, 5000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(lo, 1, err));
    rl_lock_free(l);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
}

TEST(reentrant_acquire_racing_a_round_that_finds_the_key_gone_leaves_nothing_behind) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 600, 2000, &log); /* renewed every 200 ms */
    rl_lock *l = new_lock(c, "race");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    freeReplyObject(raw(g_raw, "DEL race"));
    /* While Redis sleeps a renewal round queues up before the reentrant acquire: Redis answers
     * the round "gone", then grants the acquire a fresh key. */
    redisContext *stall = stall_start(500);
    sleep_ms(300);
    rl_error e;
    rl_status st = rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e);
    stall_end(stall);
    CHECK_MSG(st == RL_OK || st == RL_LOST, "acquire: %s", e.message);
    if (st == RL_LOST) CHECK_INT(raw_int(g_raw, "EXISTS race"), 0); /* the grant taken back */
    CHECK_SOON(rl_lock_lost(l, 1, NULL), 2000);
    while (rl_lock_local_holds(l, 1) > 0)
        CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    CHECK_INT(raw_int(g_raw, "EXISTS race"), 0); /* no fresh key left to block others */
    CHECK_SOON(event_count(&log, RL_EVENT_LOST) == 1, 2000);
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
}

TEST(hold_stopped_by_max_hold_is_freed_in_redis_by_its_release) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 3000, 0, &log);
    rl_lock *l = new_lock(c, "capped");
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.wait_ms = 0;
    o.max_hold_ms = 300;
    CHECK_OK(rl_lock_acquire_with(l, 1, &o, err));
    CHECK_SOON(rl_lock_lost(l, 1, NULL), 3000); /* at the first round after 300 ms */
    CHECK(raw_int(g_raw, "PTTL capped") > 0);   /* still this owner's key in Redis */
    CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST);
    CHECK_INT(raw_int(g_raw, "EXISTS capped"), 0); /* freed now, not a lease later */
    rl_lock_free(l);
    rl_client_free(c);
    event_log_destroy(&log);
}

TEST(ended_context_stops_renewal_releases_and_reports) {
    event_log log;
    event_log_init(&log);
    rl_client *c = client_with(g_server.url, 900, 0, &log), *other = new_client(g_server.url, 0);
    rl_lock *l, *f, *lo;
    CHECK_OK(rl_lock_new(c, "orphan", 6, &l, err));
    CHECK_OK(rl_lock_new_kind(c, RL_LOCK_FAIR, "orphan2", 7, &f, err));
    CHECK_OK(rl_lock_new(other, "orphan", 6, &lo, err));
    CHECK_OK(rl_lock_acquire(l, 7, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(l, 7, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(f, 7, 60000, 0, NULL, NULL, err));
    CHECK_STATUS(rl_lock_acquire(lo, 1, 5000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    rl_context_ended(7);
    CHECK_INT(raw_int(g_raw, "EXISTS orphan"), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS orphan2"), 0);
    CHECK_INT(rl_lock_local_holds(l, 7), 0);
    CHECK_SOON(event_count(&log, RL_EVENT_ABANDONED) == 2, 2000);
    CHECK_OK(rl_lock_acquire(lo, 1, 5000, 0, NULL, NULL, err));
    sleep_ms(700); /* nothing of context 7 is renewed any more */
    CHECK_OK(rl_lock_release(lo, 1, err));
    rl_context_ended(7); /* nothing left: a no-op */
    rl_lock_free(l);
    rl_lock_free(f);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
    event_log_destroy(&log);
}

TEST(retried_release_of_a_vanished_rw_lock_still_answers_lost) {
    rl_client *c = client_with(g_server.url, 0, 300, NULL);
    for (int kind = RL_LOCK_READ; kind <= RL_LOCK_WRITE; kind++) {
        rl_lock *l;
        CHECK_OK(rl_lock_new_kind(c, (rl_lock_kind)kind, "vanished", 8, &l, err));
        CHECK_OK(rl_lock_acquire(l, 1, 60000, 0, NULL, NULL, err));
        freeReplyObject(raw(g_raw, "DEL vanished"));
        redisContext *stall = stall_start(800);
        CHECK_STATUS(rl_lock_release(l, 1, err), RL_ERR_CONNECTION); /* its answer is lost */
        stall_end(stall);
        CHECK_STATUS(rl_lock_release(l, 1, err), RL_LOST); /* the retry: still "not held" */
        CHECK_INT(rl_lock_local_holds(l, 1), 0);
        rl_lock_free(l);
    }
    rl_client_free(c);
}
