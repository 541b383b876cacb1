/* Unlock latches do not linger: a release's latch DEL rides in the next write on its connection,
 * and when none comes, it is sent within a short bound (deferred.c), and before close returns. */
#include <stdatomic.h>
#include <stdio.h>

#include "client.h"
#include "harness.h"

static long long latches(void) {
    redisReply *r = raw(g_raw, "KEYS redisson_unlock_latch*");
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

TEST(latch_of_a_release_left_idle_is_gone_soon) {
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "idle:latch");
    for (int kind = 0; kind < 2; kind++) { /* fixed lease, then watchdog */
        CHECK_OK(rl_lock_acquire(l, 1, kind ? RL_LEASE_WATCHDOG : 10000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
        /* The DEL is sent after RL_DEFERRED_IDLE_MS (0.1 s) of idleness; 1 s is a wide margin
         * (without it, the latch stays for its 20 s TTL). */
        CHECK_SOON(latches() == 0, 1000);
    }
    rl_lock_free(l);
    rl_client_free(c);
}

TEST(latches_of_many_names_released_then_idle_are_gone_soon) {
    rl_client *c = new_client(g_server.url, 0);
    char name[32];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "idle:many:%d", i);
        rl_lock *l = new_lock(c, name);
        CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
        rl_lock_free(l);
    }
    CHECK_SOON(latches() == 0, 1000);
    rl_client_free(c);
}

typedef struct cycling {
    rl_client *client;
    uint64_t context;
    int rounds;
    rl_status last;
} cycling;

static void *cycle(void *arg) {
    cycling *w = arg;
    char name[32];
    snprintf(name, sizeof name, "close:latch:%llu", (unsigned long long)w->context);
    rl_lock *l = new_lock(w->client, name);
    rl_error e;
    w->last = RL_OK;
    for (int i = 0; i < w->rounds && w->last == RL_OK; i++) {
        w->last = rl_lock_acquire(l, w->context, 10000, 0, NULL, NULL, &e);
        if (w->last == RL_OK) w->last = rl_lock_release(l, w->context, &e);
    }
    rl_lock_free(l);
    return NULL;
}

TEST(latches_are_gone_when_close_returns) {
    enum { THREADS = 16 };
    rl_client *c = new_client(g_server.url, 0);
    cycling ws[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ws[i] = (cycling){.client = c, .context = (uint64_t)i + 1, .rounds = 50};
        pthread_create(&t[i], NULL, cycle, &ws[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(ws[i].last, RL_OK);
    }
    rl_client_free(c); /* at once: the idle connections still carry their last latch's DEL */
    CHECK_INT(latches(), 0);
    CHECK_INT(lock_keys(), 0);
}

/* Round trips made on the client's command connections (white box). */
static uint64_t pool_exchanges(rl_client *c) {
    uint64_t n = 0;
    pthread_mutex_lock(&c->pool.mu);
    for (int i = 0; i < c->pool.size; i++)
        n += c->pool.conns[i].exchanges;
    pthread_mutex_unlock(&c->pool.mu);
    return n;
}

TEST(one_thread_cycle_sends_no_extra_round_trip_for_its_latches) {
    /* The DEL rides in the next acquire's write: a loop of cycles makes two round trips each. */
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "cycle:latch");
    CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    uint64_t before = pool_exchanges(c);
    for (int i = 0; i < 100; i++) {
        CHECK_OK(rl_lock_acquire(l, 1, 10000, 0, NULL, NULL, err));
        CHECK_OK(rl_lock_release(l, 1, err));
    }
    uint64_t made = pool_exchanges(c) - before;
    /* 200, plus at most one timer's send if the machine stalled this loop for 0.1 s. */
    CHECK_MSG(made >= 200 && made <= 202, "%llu round trips for 100 cycles",
              (unsigned long long)made);
    CHECK_INT(latches(), 1);          /* the last one still rides with the next exchange... */
    CHECK_SOON(latches() == 0, 1000); /* ...or goes by itself */
    rl_lock_free(l);
    rl_client_free(c);
}
