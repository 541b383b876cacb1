/* The core on a Redis Cluster (3 masters, 3 replicas: cluster_kit.h), for the sanitizer builds:
 * locks at every master, a waiter woken by a sharded message, the watchdog's rounds going to
 * every node at once. tests/cluster covers migrations, failovers and Redisson. */
#include <stdio.h>
#include <string.h>

#include "cluster_kit.h"
#include "harness.h"

#define NAMES 24 /* spread over the 16,384 slots: every master gets some */

static rl_client *cluster_client(int64_t watchdog_ms) {
    const char *u = test_cluster_url();
    return u ? new_client(u, watchdog_ms) : NULL;
}

TEST(cluster_locks_exclude_at_every_master) {
    rl_client *a = cluster_client(0), *b = cluster_client(0);
    CHECK(a && b);
    rl_lock *mine[NAMES], *theirs[NAMES];
    char name[32];
    for (int i = 0; i < NAMES; i++) {
        snprintf(name, sizeof name, "c:excl:%d", i);
        mine[i] = new_lock(a, name), theirs[i] = new_lock(b, name);
        CHECK_OK(rl_lock_acquire(mine[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_acquire(mine[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
        CHECK_STATUS(rl_lock_acquire(theirs[i], 1, 10000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    }
    for (int i = 0; i < NAMES; i++) {
        int64_t count = 0;
        CHECK_OK(rl_lock_hold_count(mine[i], 1, &count, err));
        CHECK_INT(count, 2);
        CHECK_OK(rl_lock_release(mine[i], 1, err));
        CHECK_OK(rl_lock_release(mine[i], 1, err));
        CHECK_OK(rl_lock_acquire(theirs[i], 1, 10000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(theirs[i], 1, err));
        rl_lock_free(mine[i]), rl_lock_free(theirs[i]);
    }
    rl_stats s;
    rl_client_stats(a, &s);
    CHECK_INT(s.cluster_refreshes, 1);
    rl_client_free(a), rl_client_free(b);
}

TEST(cluster_waiter_woken_by_sharded_message) {
    rl_client *a = cluster_client(0), *b = cluster_client(0);
    CHECK(a && b);
    rl_lock *held = new_lock(a, "c:wake"), *wanted = new_lock(b, "c:wake");
    CHECK_OK(rl_lock_acquire(held, 1, 30000, 0, NULL, NULL, err));
    waiter w = {.lock = wanted, .context = 1, .wait_ms = 20000};
    pthread_t t;
    pthread_create(&t, NULL, waiter_main, &w);
    rl_stats s;
    for (int i = 0; i < 500; i++) {
        rl_client_stats(b, &s);
        if (s.subscriptions == 1) break;
        sleep_ms(10);
    }
    CHECK_INT(s.subscriptions, 1);
    sleep_ms(100);
    int64_t released = now_ms();
    CHECK_OK(rl_lock_release(held, 1, err));
    pthread_join(t, NULL);
    CHECK_INT(w.status, RL_OK);
    CHECK_MSG(w.acquired_at - released < 5000, "woken %lld ms after the release (lease 30 s)",
              (long long)(w.acquired_at - released));
    /* Each key at its node, redirects followed: the waiter sent its acquire itself. */
    rl_client_stats(b, &s);
    CHECK_INT(s.woken_acquires, 0);
    CHECK_OK(rl_lock_release(wanted, 1, err));
    rl_lock_free(held), rl_lock_free(wanted);
    rl_client_free(a), rl_client_free(b);
}

TEST(cluster_watchdog_round_trip_per_node) {
    rl_client *c = cluster_client(900); /* a round every 300 ms */
    CHECK(c);
    rl_lock *locks[NAMES];
    char name[32];
    for (int i = 0; i < NAMES; i++) {
        snprintf(name, sizeof name, "c:wd:%d", i);
        locks[i] = new_lock(c, name);
        CHECK_OK(rl_lock_acquire(locks[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    }
    sleep_ms(400);
    rl_stats before, after;
    rl_client_stats(c, &before);
    sleep_ms(1500);
    rl_client_stats(c, &after);
    uint64_t rounds = after.renew_rounds - before.renew_rounds;
    CHECK(rounds >= 3);
    CHECK_INT(after.last_round_nodes, 3);
    CHECK_INT(after.last_round_holds, NAMES);
    CHECK_INT(after.renew_round_trips - before.renew_round_trips, 3 * rounds);
    for (int i = 0; i < NAMES; i++) {
        CHECK(!rl_lock_lost(locks[i], 1, NULL));
        CHECK_OK(rl_lock_release(locks[i], 1, err));
        rl_lock_free(locks[i]);
    }
    rl_client_free(c);
}

/* rl_inspect reads each name at its master, rl_scan_locks walks every master (its cursor names
 * the master), a bad cursor is refused. */
TEST(cluster_inspect_and_scan_every_master) {
    rl_client *c = cluster_client(0);
    CHECK(c != NULL);
    rl_lock *locks[NAMES];
    char name[32];
    for (int i = 0; i < NAMES; i++) {
        snprintf(name, sizeof name, "c:insp:%d", i);
        locks[i] = new_lock(c, name);
        CHECK_OK(rl_lock_acquire(locks[i], 1, 30000, 0, NULL, NULL, err));
    }
    for (int i = 0; i < NAMES; i++) {
        snprintf(name, sizeof name, "c:insp:%d", i);
        rl_inspection *in;
        CHECK_OK(rl_inspect(c, name, strlen(name), &in, err));
        CHECK_MSG(in->kind == RL_KEY_REENTRANT && in->n_owners == 1, "%s: %s", name,
                  rl_key_kind_name(in->kind));
        /* The holder's name, from CLIENT LIST at this name's master (one per master). */
        int named = strchr(in->owners[0].name, ':') != NULL;
        rl_inspection_free(in);
        CHECK_MSG(named, "%s: no name for its holder", name);
    }
    size_t found = 0, steps = 0;
    uint64_t cursor = 0;
    do {
        rl_scan_page *p;
        CHECK_OK(rl_scan_locks(c, cursor, "c:insp:*", 5, &p, err));
        found += p->n;
        cursor = p->next;
        steps++;
        rl_scan_page_free(p);
    } while (cursor != 0 && steps < 10000);
    CHECK_INT(found, NAMES);
    CHECK_MSG(steps >= 3, "one step per master at least: %zu", steps);
    rl_scan_page *p;
    CHECK_STATUS(rl_scan_locks(c, (uint64_t)999 << 42, NULL, 10, &p, err), RL_ERR_ARGUMENT);
    for (int i = 0; i < NAMES; i++) {
        CHECK_OK(rl_lock_release(locks[i], 1, err));
        rl_lock_free(locks[i]);
    }
    rl_client_free(c);
}
