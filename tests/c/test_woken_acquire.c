/* The acquire of a waiter woken by a release message, sent by the subscriber thread itself
 * (woken_acquire.c): taken when it can be, and every other outcome the same as the waiter's own
 * try: a flushed script, a server that became a replica, a fair lock, a wait that ends (its
 * deadline, an abort) just as the message comes, none leaving a hold behind. */
#include <pthread.h>
#include <string.h>

#include "harness.h"

static uint64_t woken_acquires(rl_client *c) {
    rl_stats st;
    rl_client_stats(c, &st);
    return st.woken_acquires;
}

/* b waits on `name` (held by a) on a thread of its own; the caller releases, then joins. */
static void start_waiting(waiter *w, pthread_t *t, rl_lock *lb, int64_t wait_ms) {
    *w = (waiter){.lock = lb, .context = 1, .wait_ms = wait_ms};
    pthread_create(t, NULL, waiter_main, w);
    sleep_ms(300); /* subscribed, tried, asleep */
}

TEST(woken_acquire_is_sent_by_the_subscriber_thread) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock_kind kinds[2] = {RL_LOCK_REENTRANT, RL_LOCK_FENCED};
    for (int i = 0; i < 2; i++) {
        rl_lock *la = new_kind(a, kinds[i], "woken"), *lb = new_kind(b, kinds[i], "woken");
        CHECK_OK(rl_lock_acquire(la, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        uint64_t before = woken_acquires(b);
        waiter w;
        pthread_t t;
        start_waiting(&w, &t, lb, RL_WAIT_FOREVER);
        CHECK_OK(rl_lock_release(la, 1, err));
        pthread_join(t, NULL);
        CHECK_INT(w.status, RL_OK);
        CHECK_INT(woken_acquires(b) - before, 1);
        /* A hold like any other: valid, renewed from the time the thread sent it, released. */
        CHECK_OK(rl_lock_check(lb, 1, 1000, NULL, err));
        if (kinds[i] == RL_LOCK_FENCED) CHECK(rl_lock_token(lb, 1) > 0);
        CHECK_INT(raw_int(g_raw, "HEXISTS woken %s:1", rl_client_id(b)), 1);
        CHECK_OK(rl_lock_release(lb, 1, err));
        CHECK_INT(raw_int(g_raw, "EXISTS woken"), 0);
        rl_lock_free(la);
        rl_lock_free(lb);
    }
    rl_client_free(a);
    rl_client_free(b);
}

TEST(woken_acquire_refused_noscript_is_tried_again_the_waiters_way) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "flushed"), *lb = new_lock(b, "flushed");
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    waiter w;
    pthread_t t;
    start_waiting(&w, &t, lb, 5000);
    /* The server loses its scripts, then the lock is freed and its message sent by hand: the
     * acquire the thread sends is answered NOSCRIPT (not run); the waiter loads and tries. */
    freeReplyObject(raw(g_raw, "SCRIPT FLUSH"));
    freeReplyObject(raw(g_raw, "DEL flushed"));
    freeReplyObject(raw(g_raw, "PUBLISH redisson_lock__channel:{flushed} 0"));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_INT(woken_acquires(b), 0);
    CHECK_INT(raw_int(g_raw, "HEXISTS flushed %s:1", rl_client_id(b)), 1);
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(woken_acquire_refused_by_a_replica_ends_as_the_waiters_own_try) {
    test_server master;
    CHECK(server_start(&master, NULL) == 0);
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "demoted"), *lb = new_lock(b, "demoted");
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    waiter w;
    pthread_t t;
    start_waiting(&w, &t, lb, 5000);
    /* The lock is freed (its key gone, as at the end of a lease), then the server becomes a
     * replica (as a failover's old master): the acquire's write is refused READONLY, on the
     * waiter's pooled connection too; a message still wakes it. */
    freeReplyObject(raw(g_raw, "DEL demoted"));
    freeReplyObject(raw(g_raw, "REPLICAOF 127.0.0.1 %d", master.port));
    freeReplyObject(raw(g_raw, "PUBLISH redisson_lock__channel:{demoted} 0"));
    pthread_join(t, NULL);
    freeReplyObject(raw(g_raw, "REPLICAOF NO ONE"));
    /* As the waiter's own try: READONLY, once more on a fresh connection, then the failure. */
    CHECK_INT(w.status, RL_ERR_CONNECTION);
    CHECK_INT(woken_acquires(b), 0);
    CHECK_INT(rl_lock_local_holds(lb, 1), 0);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
    server_stop(&master);
}

TEST(fair_lock_hand_off_stays_the_waiters_own) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_kind(a, RL_LOCK_FAIR, "fairwoken"),
            *lb = new_kind(b, RL_LOCK_FAIR, "fairwoken");
    CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
    waiter w;
    pthread_t t;
    start_waiting(&w, &t, lb, 5000);
    CHECK_OK(rl_lock_release(la, 1, err));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_INT(woken_acquires(b), 0); /* its script takes the time of the call */
    CHECK_OK(rl_lock_release(lb, 1, err));
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

static int abort_at(void *userdata) {
    return now_ms() >= *(int64_t *)userdata;
}

/* Rounds where the waiter's wait ends (its deadline, or its hook aborting) about when the release
 * message comes: whatever it answers, Redis and the client agree on it, and no hold is left. */
static void race_rounds(int by_hook) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *la = new_lock(a, "race"), *lb = new_lock(b, "race");
    int got = 0, refused = 0;
    for (int i = 0; i < 24; i++) {
        CHECK_OK(rl_lock_acquire(la, 1, 10000, 0, NULL, NULL, err));
        int64_t end = now_ms() + 100;
        waiter w = {.lock = lb, .context = 1, .wait_ms = by_hook ? RL_WAIT_FOREVER : 100};
        if (by_hook) w.hook = abort_at, w.hook_userdata = &end;
        pthread_t t;
        pthread_create(&t, NULL, waiter_main, &w);
        sleep_ms(88 + i); /* from 12 ms before its end to 12 ms after */
        CHECK_OK(rl_lock_release(la, 1, err));
        pthread_join(t, NULL);
        int held = raw_int(g_raw, "HEXISTS race %s:1", rl_client_id(b)) == 1;
        if (w.status == RL_OK) {
            got++;
            CHECK(held);
            CHECK_INT(rl_lock_local_holds(lb, 1), 1);
            CHECK_OK(rl_lock_release(lb, 1, err));
        } else {
            refused++;
            CHECK_INT(w.status, by_hook ? RL_ABORTED : RL_NOT_ACQUIRED);
            CHECK_MSG(!held, "round %d: %s, yet Redis holds it for the waiter", i,
                      rl_status_name(w.status));
            CHECK_INT(rl_lock_local_holds(lb, 1), 0);
        }
        CHECK_INT(raw_int(g_raw, "EXISTS race"), 0);
    }
    CHECK_MSG(got > 0 && refused > 0, "%d acquired, %d not: the rounds missed the race", got,
              refused);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(woken_acquire_and_a_deadline_at_the_message_leave_no_hold) {
    race_rounds(0);
}

TEST(woken_acquire_and_an_abort_at_the_message_leave_no_hold) {
    race_rounds(1);
}
