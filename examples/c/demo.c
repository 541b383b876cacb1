/* redlease demo: hold a lock in watchdog mode, watch its lease being renewed, and hand it to a
 * waiting thread the moment it is released.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 ./demo     (make demo starts a throwaway server for you) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "redlease.h"

#define WATCHDOG_MS 900 /* short, so that renewals show within seconds (the default is 30 s) */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(rl_status st, const rl_error *err, const char *what) {
    if (st == RL_OK) return;
    fprintf(stderr, "demo: %s failed: %s (%s)\n", what, err->message, rl_status_name(st));
    exit(1);
}

typedef struct worker {
    rl_lock *lock;
    double acquired_at;
} worker;

/* The second thread: waits for the lock (woken by pub/sub, not by polling). */
static void *wait_for_it(void *arg) {
    worker *w = arg;
    rl_error err;
    printf("  [waiter] waiting for \"orders:42\"...\n");
    check(rl_lock_acquire(w->lock, 2, 10000, RL_WAIT_FOREVER, NULL, NULL, &err), &err, "wait");
    w->acquired_at = now_s();
    printf("  [waiter] got it\n");
    check(rl_lock_release(w->lock, 2, &err), &err, "release");
    return NULL;
}

int main(void) {
    const char *url = getenv("REDIS_URL");
    if (!url) {
        fprintf(stderr, "demo: set REDIS_URL (make demo does it for you)\n");
        return 2;
    }
    rl_options options;
    rl_options_init(&options);
    options.watchdog_timeout_ms = WATCHDOG_MS;
    rl_client *client;
    rl_lock *lock;
    rl_error err;
    check(rl_client_new(url, &options, &client, &err), &err, "connect");
    check(rl_lock_new(client, "orders:42", 9, &lock, &err), &err, "lock");
    printf("redlease %s, client %s, Redis at %s\n", RL_VERSION, rl_client_id(client), url);

    check(rl_lock_acquire(lock, 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &err), &err, "acquire");
    printf("[holder] holds \"orders:42\" in watchdog mode (lease %d ms, renewed every %d ms)\n",
           WATCHDOG_MS, WATCHDOG_MS / 3);

    worker w = {.lock = lock};
    pthread_t waiter;
    pthread_create(&waiter, NULL, wait_for_it, &w);

    for (int i = 1; i <= 8; i++) { /* 2.4 s: well past the 0.9 s lease, kept alive */
        struct timespec tick = {0, 300 * 1000000};
        nanosleep(&tick, NULL);
        int64_t pttl;
        check(rl_lock_remaining(lock, &pttl, &err), &err, "remaining");
        printf("[holder] t=%.1fs  PTTL %4lld ms\n", i * 0.3, (long long)pttl);
    }
    rl_stats stats;
    rl_client_stats(client, &stats);
    printf("[holder] %llu renewal rounds so far; releasing\n",
           (unsigned long long)stats.renew_rounds);
    double released_at = now_s();
    check(rl_lock_release(lock, 1, &err), &err, "release");
    pthread_join(waiter, NULL);
    printf("[holder] the waiter held the lock %.2f ms after the release\n",
           (w.acquired_at - released_at) * 1e3);

    int locked;
    check(rl_lock_is_locked(lock, &locked, &err), &err, "is_locked");
    printf("done: \"orders:42\" is %s\n", locked ? "still locked (unexpected)" : "free");
    rl_lock_free(lock);
    rl_client_free(client);
    return locked ? 1 : 0;
}
