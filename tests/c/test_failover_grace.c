/* The failover grace (failover_grace.c): after a client followed a new master it grants no new
 * hold for failover_grace_ms, so that a holder on the old master is told first. The Sentinel
 * deployment begins it on +switch-master (tests/sentinel/test_sentinel.py runs that path against
 * a real failover); here it is begun directly, to pin down what it refuses and what it lets by. */
#include <string.h>

#include "client.h"
#include "failover_grace.h"
#include "harness.h"
#include "slots.h"
#include "waiting.h"

static rl_client *client_with_grace(int64_t grace_ms) {
    rl_options o;
    rl_options_init(&o);
    o.failover_grace_ms = grace_ms;
    rl_client *c = NULL;
    rl_error e;
    if (rl_client_new(g_server.url, &o, &c, &e) != RL_OK) return NULL;
    return c;
}

TEST(failover_grace_defaults_to_a_second) {
    rl_options o;
    rl_options_init(&o);
    CHECK_INT(o.failover_grace_ms, 1000);
}

/* A free lock is not granted during the grace: a try answers not acquired, saying why, and
 * sends nothing; a waiting acquire gets it once the grace is over. */
TEST(a_free_lock_is_granted_only_after_the_grace) {
    rl_client *c = client_with_grace(600);
    CHECK(c);
    rl_lock *l = new_lock(c, "grace:free");
    int64_t began = now_ms();
    rl_failover_grace_begin(c);
    rl_error e;
    CHECK_INT(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "failover_grace") != NULL, "%s", e.message);
    CHECK_INT(raw_int(g_raw, "EXISTS grace:free"), 0);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 5000, NULL, NULL, err));
    int64_t waited = now_ms() - began;
    CHECK_MSG(waited >= 550, "granted %lld ms after the grace began", (long long)waited);
    rl_stats s;
    rl_client_stats(c, &s);
    CHECK_INT(s.master_changes, 1);
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
}

/* A context that already holds the lock re-enters during the grace: nothing new is granted. */
TEST(a_holder_reenters_during_the_grace) {
    rl_client *c = client_with_grace(5000);
    CHECK(c);
    rl_lock *l = new_lock(c, "grace:held");
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    rl_failover_grace_begin(c);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_INT(raw_int(g_raw, "HLEN grace:held"), 1);
    CHECK_STATUS(rl_lock_acquire(l, 2, RL_LEASE_WATCHDOG, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS grace:held"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A waiter asleep on the lock's channel when the grace begins: the release message wakes it, but
 * the subscriber thread sends no acquire for it and it takes the lock only after the grace. */
TEST(a_woken_waiter_waits_the_grace_out) {
    rl_client *holder = new_client(g_server.url, 0);
    rl_client *c = client_with_grace(800);
    CHECK(holder && c);
    rl_lock *held = new_lock(holder, "grace:woken"), *l = new_lock(c, "grace:woken");
    CHECK_OK(rl_lock_acquire(held, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    waiter w = {.lock = l, .context = 7, .wait_ms = 10000, .hold_ms = 1};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    CHECK_SOON(rl_wait_subscriptions(c) == 1, 2000);
    sleep_ms(20); /* past its try, asleep */
    int64_t began = now_ms();
    rl_failover_grace_begin(c);
    CHECK_OK(rl_lock_release(held, 1, err)); /* its message wakes the waiter */
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_MSG(w.acquired_at - began >= 750, "granted %lld ms after the grace began",
              (long long)(w.acquired_at - began));
    rl_stats s;
    rl_client_stats(c, &s);
    CHECK_INT(s.woken_acquires, 0);
    rl_lock_free(held);
    rl_lock_free(l);
    rl_client_free(holder);
    rl_client_free(c);
}

/* failover_grace 0 turns it off: the try right after a new master is granted. */
TEST(failover_grace_zero_grants_at_once) {
    rl_client *c = client_with_grace(0);
    CHECK(c);
    rl_lock *l = new_lock(c, "grace:off");
    rl_failover_grace_begin(c);
    CHECK_OK(rl_lock_acquire(l, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_stats s;
    rl_client_stats(c, &s);
    CHECK_INT(s.master_changes, 1);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A Cluster keeps the grace per slot (deploy_cluster.c begins it for the slots it learned moved):
 * a lock in a moved slot waits it out, a lock in any other slot is granted at once. Here on one
 * Redis, with the per-slot grace set up and begun directly; tests/cluster/test_failover_grace.py
 * runs it on a real cluster. */
TEST(a_moved_slot_grants_only_after_the_grace_and_other_slots_at_once) {
    rl_client *c = client_with_grace(600);
    CHECK(c);
    CHECK_OK(rl_failover_grace_per_slot(c, err));
    rl_lock *moved = new_lock(c, "{grace}moved"), *other = new_lock(c, "{elsewhere}other");
    uint64_t slots[RL_SLOTS / 64] = {0};
    int slot = rl_key_slot("grace", 5);
    CHECK(slot != rl_key_slot("elsewhere", 9));
    slots[slot / 64] |= (uint64_t)1 << (slot % 64);
    int64_t began = now_ms();
    rl_failover_grace_begin_slots(c, slots);
    rl_error e;
    CHECK_INT(rl_lock_acquire(moved, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e), RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "failover_grace") != NULL, "%s", e.message);
    CHECK_INT(raw_int(g_raw, "EXISTS {grace}moved"), 0);
    CHECK_OK(rl_lock_acquire(other, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(moved, 1, RL_LEASE_WATCHDOG, 5000, NULL, NULL, err));
    int64_t waited = now_ms() - began;
    CHECK_MSG(waited >= 550, "granted %lld ms after the grace began", (long long)waited);
    rl_stats s;
    rl_client_stats(c, &s);
    CHECK_INT(s.master_changes, 1);
    CHECK_OK(rl_lock_release(moved, 1, err));
    CHECK_OK(rl_lock_release(other, 1, err));
    rl_lock_free(moved);
    rl_lock_free(other);
    rl_failover_grace_free_slots(c); /* a standalone client's deployment does not own it */
    rl_client_free(c);
}
