/* Measure 1b for the C core: T threads of one client, each cycling acquire+release on its own
 * lock name for S seconds; the aggregate is the total over the elapsed time. The client's
 * connection pool size is an argument, to show what the pool (4 by default, the Python
 * binding's) costs. Prints one JSON object.
 * Usage: bench_parallel REDIS_URL threads seconds pool_size lease_ms|-1 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "redlease.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct worker {
    rl_client *client;
    int index;
    int64_t lease;
    long cycles;
} worker;

static atomic_int go, stop;

static void *run(void *arg) {
    worker *w = arg;
    char name[32];
    int len = snprintf(name, sizeof name, "bench:cparallel:%d", w->index);
    rl_lock *l;
    rl_error e;
    if (rl_lock_new(w->client, name, (size_t)len, &l, &e) != RL_OK) exit(2);
    uint64_t context = (uint64_t)w->index + 1;
    for (int i = 0; i < 20; i++) { /* warm up: connections, scripts */
        if (rl_lock_acquire(l, context, w->lease, 0, NULL, NULL, &e) != RL_OK) exit(3);
        rl_lock_release(l, context, &e);
    }
    while (!atomic_load(&go)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    long n = 0;
    while (!atomic_load(&stop)) {
        if (rl_lock_acquire(l, context, w->lease, 0, NULL, NULL, &e) != RL_OK) {
            fprintf(stderr, "bench_parallel: acquire: %s\n", e.message);
            exit(4);
        }
        if (rl_lock_release(l, context, &e) != RL_OK) {
            fprintf(stderr, "bench_parallel: release: %s\n", e.message);
            exit(5);
        }
        n++;
    }
    w->cycles = n;
    rl_lock_free(l);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: bench_parallel REDIS_URL threads seconds pool_size lease_ms|-1\n");
        return 1;
    }
    int threads = atoi(argv[2]), pool = atoi(argv[4]);
    double seconds = atof(argv[3]);
    int64_t lease = atoll(argv[5]);
    if (threads < 1 || threads > 1024 || seconds <= 0) return 1;
    rl_options o;
    rl_options_init(&o);
    o.pool_size = pool;
    rl_client *c;
    rl_error e;
    if (rl_client_new(argv[1], &o, &c, &e) != RL_OK) {
        fprintf(stderr, "bench_parallel: %s\n", e.message);
        return 1;
    }
    worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){c, i, lease, 0};
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    struct timespec settle = {0, 200000000};
    nanosleep(&settle, NULL);
    atomic_store(&go, 1);
    double t0 = now_s();
    struct timespec span = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&span, NULL);
    atomic_store(&stop, 1);
    long total = 0, lo = -1, hi = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += w[i].cycles;
        if (lo < 0 || w[i].cycles < lo) lo = w[i].cycles;
        if (w[i].cycles > hi) hi = w[i].cycles;
    }
    double elapsed = now_s() - t0;
    printf("{\"measure\": \"parallel\", \"rows\": [{\"impl\": \"redlease-c%s-pool%d\", "
           "\"label\": \"redlease C, %s, pool of %d\", \"threads\": %d, \"pool_size\": %d, "
           "\"cycles\": %ld, \"seconds\": %.3f, \"cycles_per_s\": %.1f, \"per_thread_min\": %ld, "
           "\"per_thread_max\": %ld}]}\n",
           lease < 0 ? "" : "-fixed", pool, lease < 0 ? "watchdog" : "fixed lease", pool, threads,
           pool, total, elapsed, (double)total / elapsed, lo, hi);
    rl_client_free(c);
    free(w);
    free(t);
    return 0;
}
