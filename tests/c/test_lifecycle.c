/* A client's life cycle against the process-wide paths that visit every client (a thread's end,
 * rl_context_ended): clients made and closed while threads end must never deadlock or be freed
 * twice. A hang ends the run with a message instead of hanging it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

/* Ends the process with a message when `seconds` pass before guard_end: a deadlocked test cannot
 * return, and the run must fail rather than hang. */
typedef struct guard {
    pthread_mutex_t mu;
    pthread_cond_t done_cond;
    int done;
    int seconds;
    const char *what;
    pthread_t thread;
} guard;

static void *guard_main(void *arg) {
    guard *g = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += g->seconds;
    pthread_mutex_lock(&g->mu);
    int rc = 0;
    while (!g->done && rc == 0)
        rc = pthread_cond_timedwait(&g->done_cond, &g->mu, &until);
    int done = g->done;
    pthread_mutex_unlock(&g->mu);
    if (!done) {
        printf("FAIL %s: still running after %d s (deadlocked)\n0 passed, 1 failed\n", g->what,
               g->seconds);
        fflush(stdout);
        _Exit(1);
    }
    return NULL;
}

static void guard_start(guard *g, int seconds, const char *what) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->done_cond, NULL);
    g->done = 0;
    g->seconds = seconds;
    g->what = what;
    pthread_create(&g->thread, NULL, guard_main, g);
}

static void guard_end(guard *g) {
    pthread_mutex_lock(&g->mu);
    g->done = 1;
    pthread_cond_signal(&g->done_cond);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->done_cond);
    pthread_mutex_destroy(&g->mu);
}

/* ---- threads ending while clients are made and closed -------------------------------------- */

#define CLOSERS 2
#define ROUNDS 2500        /* each closer's clients, at least */
#define THREADS_ENDED 3000 /* threads ended while the closers run, at least */

typedef struct churn {
    atomic_int closers_left;
    atomic_int failures;
    atomic_long threads_ended;
    rl_client *shared; /* where some ending threads hold a lock */
} churn;

/* Makes and closes clients until both counts are reached; every other one's last reference goes
 * with a lock freed after the client (the owner's last unref then comes from rl_lock_free). */
static void *closer_main(void *arg) {
    churn *ch = arg;
    for (int i = 0; i < ROUNDS || atomic_load(&ch->threads_ended) < THREADS_ENDED; i++) {
        rl_client *c = NULL;
        if (rl_client_new(g_server.url, NULL, &c, NULL) != RL_OK) {
            atomic_fetch_add(&ch->failures, 1);
            break;
        }
        rl_lock *l = NULL;
        if (i % 2 && rl_lock_new(c, "churn", 5, &l, NULL) != RL_OK)
            atomic_fetch_add(&ch->failures, 1);
        rl_client_free(c);
        rl_lock_free(l);
    }
    atomic_fetch_sub(&ch->closers_left, 1);
    return NULL;
}

typedef struct ending {
    churn *ch;
    int hold; /* take a lock of the shared client and end holding it */
} ending;

static void *ending_main(void *arg) {
    ending *e = arg;
    uint64_t context = rl_context_new();
    if (e->hold) {
        rl_lock *l = NULL;
        if (rl_lock_new(e->ch->shared, "abandoned", 9, &l, NULL) != RL_OK ||
            rl_lock_acquire(l, context, RL_LEASE_WATCHDOG, RL_WAIT_FOREVER, NULL, NULL, NULL) !=
                RL_OK)
            atomic_fetch_add(&e->ch->failures, 1);
        rl_lock_free(l);
    }
    rl_context_ended(context); /* what a host does as its thread exits */
    return NULL;
}

/* Starts short-lived threads, a few at a time, until the closers are done. */
static void *ender_main(void *arg) {
    churn *ch = arg;
    for (int round = 0; atomic_load(&ch->closers_left) > 0; round++) {
        pthread_t t[4];
        ending e[4];
        for (int i = 0; i < 4; i++) {
            e[i] = (ending){ch, round % 16 == 0 && i == 0};
            pthread_create(&t[i], NULL, ending_main, &e[i]);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        atomic_fetch_add(&ch->threads_ended, 4);
    }
    return NULL;
}

TEST(lifecycle_threads_end_while_clients_close) {
    guard g;
    guard_start(&g, 30, "lifecycle_threads_end_while_clients_close");
    churn ch = {.shared = new_client(g_server.url, 0)};
    atomic_init(&ch.closers_left, CLOSERS);
    atomic_init(&ch.failures, 0);
    atomic_init(&ch.threads_ended, 0);
    pthread_t closers[CLOSERS], enders[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&enders[i], NULL, ender_main, &ch);
    for (int i = 0; i < CLOSERS; i++)
        pthread_create(&closers[i], NULL, closer_main, &ch);
    for (int i = 0; i < CLOSERS; i++)
        pthread_join(closers[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(enders[i], NULL);
    guard_end(&g);
    CHECK_INT(atomic_load(&ch.failures), 0);
    CHECK(atomic_load(&ch.threads_ended) >= THREADS_ENDED);
    /* Every thread that ended holding had its hold released. */
    CHECK_INT(raw_int(g_raw, "EXISTS abandoned"), 0);
    rl_client_free(ch.shared);
    /* The registry is sane afterwards: a new client is made, used and closed at once. */
    rl_client *c = new_client(g_server.url, 0);
    rl_lock *l = new_lock(c, "after");
    CHECK_OK(rl_lock_acquire(l, 1, 5000, 0, NULL, NULL, err));
    CHECK_OK(rl_lock_release(l, 1, err));
    rl_lock_free(l);
    rl_client_free(c);
    rl_context_ended(rl_context_new());
}
