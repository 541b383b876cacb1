/* Multi-locks (RedissonMultiLock's rules) and RedLock over three throwaway servers: all or none,
 * the shared wait, the lease set once all are taken, majorities, and bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static rl_multilock *new_multi(rl_lock **locks, size_t n, int redlock) {
    rl_multilock *m = NULL;
    rl_error err;
    rl_status st =
        redlock ? rl_redlock_new(locks, n, &m, &err) : rl_multilock_new(locks, n, &m, &err);
    if (st != RL_OK) {
        fprintf(stderr, "multi-lock: %s\n", err.message);
        exit(2);
    }
    return m;
}

static rl_acquire_options options(int64_t lease_ms, int64_t wait_ms) {
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    return o;
}

TEST(multilock_takes_all_or_none) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *locks[3] = {new_lock(a, "m:a"), new_kind(a, RL_LOCK_FAIR, "m:b"),
                         new_kind(a, RL_LOCK_WRITE, "m:c")};
    rl_lock *other = new_lock(b, "m:b");
    rl_multilock *m = new_multi(locks, 3, 0);
    CHECK_OK(rl_lock_acquire(other, 1, 10000, 0, NULL, NULL, err));
    rl_acquire_options once = options(RL_LEASE_WATCHDOG, 0);
    rl_error e;
    CHECK(rl_multilock_acquire(m, 1, &once, &e) == RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "multi-lock not acquired"), "%s", e.message);
    CHECK_INT(rl_multilock_held(m, 1), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS m:a"), 0); /* the first one was taken back */
    CHECK_INT(raw_int(g_raw, "EXISTS m:c"), 0);
    CHECK_OK(rl_lock_release(other, 1, err));
    CHECK_OK(rl_multilock_acquire(m, 1, &once, err));
    CHECK_INT(rl_multilock_held(m, 1), 3);
    CHECK_STATUS(rl_lock_acquire(other, 1, 10000, 0, NULL, NULL, err), RL_NOT_ACQUIRED);
    CHECK_INT(rl_multilock_held(m, 2), 0); /* another context holds none of them */
    CHECK_STATUS(rl_multilock_release(m, 2, err), RL_NOT_OWNED);
    CHECK_OK(rl_multilock_release(m, 1, err));
    CHECK_INT(raw_int(g_raw, "EXISTS m:a"), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS m:b"), 0);
    CHECK_INT(raw_int(g_raw, "EXISTS m:c"), 0);
    CHECK_STATUS(rl_multilock_release(m, 1, err), RL_NOT_OWNED);
    rl_multilock_free(m);
    for (int i = 0; i < 3; i++)
        rl_lock_free(locks[i]);
    rl_lock_free(other);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(multilock_waits_for_the_last_lock_and_sets_the_lease_on_all) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *locks[2] = {new_lock(a, "w:a"), new_lock(a, "w:b")};
    rl_lock *other = new_lock(b, "w:b");
    rl_multilock *m = new_multi(locks, 2, 0);
    CHECK_OK(rl_lock_acquire(other, 1, 400, 0, NULL, NULL, err)); /* expires by itself */
    rl_acquire_options o = options(8000, 3000);
    int64_t t0 = now_ms();
    CHECK_OK(rl_multilock_acquire(m, 1, &o, err));
    int64_t waited = now_ms() - t0;
    CHECK_MSG(waited >= 300 && waited < 2500, "waited %lld ms", (long long)waited);
    /* Taken with twice the wait (6 s), then each given the lease asked for (8 s). */
    long long pa = raw_int(g_raw, "PTTL w:a"), pb = raw_int(g_raw, "PTTL w:b");
    CHECK_MSG(pa > 7000 && pa <= 8000 && pb > 7000 && pb <= 8000, "PTTL %lld, %lld", pa, pb);
    CHECK_OK(rl_multilock_release(m, 1, err));
    /* A wait that runs out takes nothing. */
    CHECK_STATUS(rl_lock_release(other, 1, err), RL_LOST); /* its 400 ms hold had expired */
    CHECK_OK(rl_lock_acquire(other, 1, 10000, 0, NULL, NULL, err));
    o = options(RL_LEASE_WATCHDOG, 300);
    t0 = now_ms();
    CHECK_STATUS(rl_multilock_acquire(m, 1, &o, err), RL_NOT_ACQUIRED);
    waited = now_ms() - t0;
    CHECK_MSG(waited >= 290 && waited < 3000, "waited %lld ms", (long long)waited);
    CHECK_INT(raw_int(g_raw, "EXISTS w:a"), 0);
    CHECK_OK(rl_lock_release(other, 1, err));
    rl_multilock_free(m);
    rl_lock_free(locks[0]);
    rl_lock_free(locks[1]);
    rl_lock_free(other);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(multilock_reentered_member_keeps_its_own_hold) {
    rl_client *a = new_client(g_server.url, 0);
    rl_lock *locks[2] = {new_lock(a, "r:a"), new_lock(a, "r:b")};
    rl_multilock *m = new_multi(locks, 2, 0);
    CHECK_OK(rl_lock_acquire(locks[0], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    rl_acquire_options o = options(RL_LEASE_WATCHDOG, 0);
    CHECK_OK(rl_multilock_acquire(m, 1, &o, err));
    CHECK_INT(rl_lock_local_holds(locks[0], 1), 2);
    CHECK_OK(rl_multilock_release(m, 1, err));
    CHECK_INT(rl_lock_local_holds(locks[0], 1), 1); /* the hold taken before is still there */
    CHECK_INT(raw_int(g_raw, "EXISTS r:a"), 1);
    CHECK_OK(rl_lock_release(locks[0], 1, err));
    rl_multilock_free(m);
    rl_lock_free(locks[0]);
    rl_lock_free(locks[1]);
    rl_client_free(a);
}

TEST(multilock_bad_input_is_refused) {
    rl_client *a = new_client(g_server.url, 0), *b = new_client(g_server.url, 0);
    rl_lock *x = new_lock(a, "x"), *x_again = new_lock(a, "x"), *x_other = new_lock(b, "x");
    rl_multilock *m = NULL;
    rl_lock *none[1] = {NULL};
    CHECK_STATUS(rl_multilock_new(none, 0, &m, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_multilock_new(none, 1, &m, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_redlock_new(NULL, 3, &m, err), RL_ERR_ARGUMENT);
    rl_lock *twice[2] = {x, x_again}; /* one lock of one client, twice */
    CHECK_STATUS(rl_multilock_new(twice, 2, &m, err), RL_ERR_ARGUMENT);
    rl_lock *two_clients[2] = {x, x_other}; /* one name on two clients: allowed */
    CHECK_OK(rl_multilock_new(two_clients, 2, &m, err));
    rl_acquire_options o = options(0, 0);
    CHECK_STATUS(rl_multilock_acquire(m, 1, &o, err), RL_ERR_ARGUMENT);
    o = options(RL_LEASE_WATCHDOG, -9);
    CHECK_STATUS(rl_multilock_acquire(m, 1, &o, err), RL_ERR_ARGUMENT);
    CHECK_STATUS(rl_multilock_acquire(m, 1, NULL, err), RL_ERR_ARGUMENT);
    rl_multilock_free(m);
    rl_lock_free(x);
    rl_lock_free(x_again);
    rl_lock_free(x_other);
    rl_client_free(a);
    rl_client_free(b);
}

TEST(redlock_needs_a_majority_of_independent_servers) {
    test_server servers[3];
    rl_client *clients[3];
    rl_lock *locks[3];
    for (int i = 0; i < 3; i++) {
        CHECK(server_start(&servers[i], NULL) == 0);
        clients[i] = client_with(servers[i].url, 0, 500, NULL);
        locks[i] = new_lock(clients[i], "red");
    }
    rl_multilock *red = new_multi(locks, 3, 1);
    rl_acquire_options o = options(10000, 0);
    CHECK_OK(rl_multilock_acquire(red, 1, &o, err));
    CHECK_INT(rl_multilock_held(red, 1), 3);
    CHECK_OK(rl_multilock_release(red, 1, err));
    server_stop(&servers[2]); /* one of three down: a majority is still there */
    CHECK_OK(rl_multilock_acquire(red, 1, &o, err));
    CHECK_INT(rl_multilock_held(red, 1), 2);
    redisContext *r0 = server_connect(&servers[0]);
    CHECK_INT(raw_int(r0, "EXISTS red"), 1);
    long long pttl = raw_int(r0, "PTTL red");
    CHECK_MSG(pttl > 9000 && pttl <= 10000, "PTTL %lld", pttl);
    CHECK_OK(rl_multilock_release(red, 1, err)); /* released everywhere it was taken */
    CHECK_INT(raw_int(r0, "EXISTS red"), 0);
    server_stop(&servers[1]); /* two of three down: no majority */
    rl_error e;
    CHECK(rl_multilock_acquire(red, 1, &o, &e) == RL_NOT_ACQUIRED);
    CHECK_MSG(strstr(e.message, "RedLock not acquired: 2 of 3"), "%s", e.message);
    CHECK_INT(rl_multilock_held(red, 1), 0);
    CHECK_INT(raw_int(r0, "EXISTS red"), 0); /* the one taken was given back */
    /* With a wait, it keeps trying until the wait runs out. */
    o = options(10000, 400);
    int64_t t0 = now_ms();
    CHECK_STATUS(rl_multilock_acquire(red, 1, &o, err), RL_NOT_ACQUIRED);
    CHECK_MSG(now_ms() - t0 >= 390, "gave up after %lld ms", (long long)(now_ms() - t0));
    CHECK_INT(raw_int(r0, "EXISTS red"), 0);
    redisFree(r0);
    rl_multilock_free(red);
    for (int i = 0; i < 3; i++) {
        rl_lock_free(locks[i]);
        rl_client_free(clients[i]);
        server_stop(&servers[i]);
    }
}
