/* Closing a client: promptly whatever the network does, and every call in progress answers
 * "closed" (never a stray memory or connection error). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

typedef struct caller {
    rl_lock *lock;
    uint64_t context;
    int query; /* 1: a round trip (EXISTS) instead of an acquire */
    rl_status status;
    int64_t returned_at;
} caller;

static void *call_once(void *arg) {
    caller *c = arg;
    int locked;
    c->status = c->query
                    ? rl_lock_is_locked(c->lock, &locked, NULL)
                    : rl_lock_acquire(c->lock, c->context, 5000, RL_WAIT_FOREVER, NULL, NULL, NULL);
    c->returned_at = now_ms();
    return NULL;
}

TEST(close_is_prompt_with_the_server_paused_and_wakes_every_call) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    rl_client *holder = new_client(s.url, 0);
    rl_client *c = client_with(s.url, 3000, 5000, NULL); /* long timeouts: close must not wait */
    rl_lock *lh, *waited, *renewed;
    CHECK_OK(rl_lock_new(holder, "paused", 6, &lh, err));
    CHECK_OK(rl_lock_new(c, "paused", 6, &waited, err));
    CHECK_OK(rl_lock_new(c, "renewed", 7, &renewed, err));
    CHECK_OK(rl_lock_acquire(lh, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_acquire(renewed, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, err));
    caller blocked = {.lock = waited, .context = 2}, query = {.lock = waited, .query = 1};
    pthread_t tw, tq;
    pthread_create(&tw, NULL, call_once, &blocked);
    sleep_ms(300); /* subscribed and waiting */
    kill(s.pid, SIGSTOP);
    pthread_create(&tq, NULL, call_once, &query); /* blocked on a reply that does not come */
    sleep_ms(1200); /* a renewal round (every 1 s) is on the wire too */
    int64_t t0 = now_ms();
    rl_client_free(c);
    int64_t took = now_ms() - t0;
    pthread_join(tw, NULL);
    pthread_join(tq, NULL);
    kill(s.pid, SIGCONT);
    CHECK_MSG(took < 500, "close took %lld ms", (long long)took);
    CHECK_INT(blocked.status, RL_ERR_CLOSED);
    CHECK_INT(query.status, RL_ERR_CLOSED);
    CHECK_MSG(blocked.returned_at - t0 < 500 && query.returned_at - t0 < 500,
              "callers returned %lld and %lld ms after close",
              (long long)(blocked.returned_at - t0), (long long)(query.returned_at - t0));
    rl_lock_free(waited);
    rl_lock_free(renewed);
    rl_lock_free(lh);
    rl_client_free(holder);
    server_stop(&s);
}

typedef struct cycler {
    rl_lock *lock;
    uint64_t context;
    atomic_int *stop;
    int other_errors; /* anything but RL_OK and RL_ERR_CLOSED */
    rl_status last_other;
} cycler;

static void *cycle(void *arg) {
    cycler *c = arg;
    while (!atomic_load(c->stop)) {
        rl_status st = rl_lock_acquire(c->lock, c->context, RL_LEASE_WATCHDOG, 0, NULL, NULL, NULL);
        if (st == RL_OK) st = rl_lock_release(c->lock, c->context, NULL);
        if (st == RL_ERR_CLOSED) break;
        if (st != RL_OK && st != RL_NOT_ACQUIRED) {
            c->other_errors++;
            c->last_other = st;
        }
    }
    return NULL;
}

TEST(close_under_load_answers_closed_to_every_thread) {
    enum { THREADS = 16, ROUNDS = 8 };
    for (int round = 0; round < ROUNDS; round++) {
        rl_client *c = new_client(g_server.url, 0);
        rl_lock *locks[THREADS];
        cycler cyclers[THREADS];
        pthread_t threads[THREADS];
        atomic_int stop = 0;
        for (int i = 0; i < THREADS; i++) {
            char name[16];
            int n = snprintf(name, sizeof name, "load:%d", i % 4);
            CHECK_OK(rl_lock_new(c, name, (size_t)n, &locks[i], err));
            cyclers[i] = (cycler){.lock = locks[i], .context = (uint64_t)i + 1, .stop = &stop};
            pthread_create(&threads[i], NULL, cycle, &cyclers[i]);
        }
        sleep_ms(100);
        rl_client_free(c);
        sleep_ms(20);
        atomic_store(&stop, 1);
        for (int i = 0; i < THREADS; i++)
            pthread_join(threads[i], NULL);
        for (int i = 0; i < THREADS; i++) {
            CHECK_MSG(cyclers[i].other_errors == 0, "round %d, thread %d: %d errors, last %s",
                      round, i, cyclers[i].other_errors, rl_status_name(cyclers[i].last_other));
            rl_lock_free(locks[i]);
        }
    }
}

/* A client whose first call is blocked asking a hung server for where to go (a sentinel for the
 * master, a cluster seed for the slot map) on a private connection: close must cut that short
 * too, and the call answers "closed". */
static void close_cuts_short_a_query_to_a_paused(const char *scheme) {
    test_server s;
    CHECK(server_start(&s, NULL) == 0);
    char url[128];
    snprintf(url, sizeof url, "%s://127.0.0.1:%d%s", scheme, s.port,
             strcmp(scheme, "redis+sentinel") == 0 ? "/mymaster" : "");
    rl_client *c = client_with(url, 0, 3000, NULL); /* long timeouts: close must not wait */
    rl_lock *lock;
    CHECK_OK(rl_lock_new(c, "asking", 6, &lock, err));
    kill(s.pid, SIGSTOP); /* it accepts connections (the kernel does) and never answers */
    caller query = {.lock = lock, .query = 1};
    pthread_t t;
    pthread_create(&t, NULL, call_once, &query);
    sleep_ms(300); /* connected and waiting for the answer */
    int64_t t0 = now_ms();
    rl_client_free(c);
    int64_t took = now_ms() - t0;
    pthread_join(t, NULL);
    kill(s.pid, SIGCONT);
    rl_lock_free(lock);
    server_stop(&s);
    CHECK_MSG(took < 500, "close took %lld ms", (long long)took);
    CHECK_MSG(query.status == RL_ERR_CLOSED && query.returned_at - t0 < 500,
              "the call answered %s %lld ms after close", rl_status_name(query.status),
              (long long)(query.returned_at - t0));
}

TEST(close_cuts_short_a_sentinel_query) {
    close_cuts_short_a_query_to_a_paused("redis+sentinel");
}

TEST(close_cuts_short_a_cluster_slot_map_fetch) {
    close_cuts_short_a_query_to_a_paused("redis+cluster");
}
