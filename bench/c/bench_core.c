/* Core figures: PING round trips per second vs acquire+release cycles per second on one
 * connection, and release-to-waiter hand-off latency between two clients.
 * Usage: bench_core REDIS_URL [cycles] [handoffs] [json]
 * With "json", prints one JSON object (for bench/run.py) instead of the text lines. */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redlease.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const rl_error *e) {
    fprintf(stderr, "%s: %s\n", what, e ? e->message : "");
    exit(1);
}

static int parse_tcp(const char *url, char *host, size_t hsize, int *port) {
    if (strncmp(url, "redis://", 8) != 0) return -1;
    const char *h = url + 8, *colon = strrchr(h, ':');
    if (!colon) return -1;
    snprintf(host, hsize, "%.*s", (int)(colon - h), h);
    *port = atoi(colon + 1);
    return 0;
}

static double ping_rate(const char *url, int n) {
    char host[128];
    int port;
    if (parse_tcp(url, host, sizeof host, &port) != 0) return 0;
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) return 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++) freeReplyObject(redisCommand(c, "PING"));
    double rate = n / (now_s() - t0);
    redisFree(c);
    return rate;
}

static double cycle_rate(rl_client *c, int n, int64_t lease) {
    rl_lock *l;
    rl_error e;
    if (rl_lock_new(c, "bench:cycle", 11, &l, &e) != RL_OK) die("lock", &e);
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (rl_lock_acquire(l, 1, lease, 0, NULL, NULL, &e) != RL_OK) die("acquire", &e);
        if (rl_lock_release(l, 1, &e) != RL_OK) die("release", &e);
    }
    double rate = n / (now_s() - t0);
    rl_lock_free(l);
    return rate;
}

/* The two sides take turns through a mutex and condition variable (no busy-waiting: on a small
 * machine a spinning thread would steal the core the waiter needs). */
typedef struct handoff {
    rl_lock *lock;
    int rounds;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    int turn; /* 2i+1: the waiter may start waiting; 2i+2: round i is done */
    double *released_at, *acquired_at;
} handoff;

static void set_turn(handoff *h, int turn) {
    pthread_mutex_lock(&h->mu);
    h->turn = turn;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->mu);
}

static void await_turn(handoff *h, int turn) {
    pthread_mutex_lock(&h->mu);
    while (h->turn != turn) pthread_cond_wait(&h->changed, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void *handoff_waiter(void *arg) {
    handoff *h = arg;
    rl_error e;
    for (int i = 0; i < h->rounds; i++) {
        await_turn(h, 2 * i + 1);
        if (rl_lock_acquire(h->lock, 2, 10000, RL_WAIT_FOREVER, NULL, NULL, &e) != RL_OK) die("wait", &e);
        h->acquired_at[i] = now_s();
        if (rl_lock_release(h->lock, 2, &e) != RL_OK) die("release", &e);
        set_turn(h, 2 * i + 2);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    if (!url) url = "redis://127.0.0.1:6379";
    int cycles = argc > 2 ? atoi(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 200;
    int json = argc > 4 && strcmp(argv[4], "json") == 0;
    rl_options o;
    rl_options_init(&o);
    o.pool_size = 1;
    rl_client *a, *b;
    rl_error e;
    if (rl_client_new(url, &o, &a, &e) != RL_OK || rl_client_new(url, &o, &b, &e) != RL_OK)
        die("client", &e);

    cycle_rate(a, 200, 10000); /* warm up: connection and script load */
    double ping = ping_rate(url, cycles);
    double fixed = cycle_rate(a, cycles, 10000);
    double watchdog = cycle_rate(a, cycles, RL_LEASE_WATCHDOG);
    if (!json) {
        printf("PING round trips/s (one connection):          %10.0f\n", ping);
        printf("acquire+release cycles/s, fixed lease:         %10.0f  (%.2f cycles per 2 PINGs)\n",
               fixed, fixed / (ping / 2));
        printf("acquire+release cycles/s, watchdog mode:       %10.0f  (%.2f cycles per 2 PINGs)\n",
               watchdog, watchdog / (ping / 2));
    }

    handoff h = {.rounds = rounds, .mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    h.released_at = calloc((size_t)rounds, sizeof(double));
    h.acquired_at = calloc((size_t)rounds, sizeof(double));
    rl_lock *la;
    if (rl_lock_new(a, "bench:handoff", 13, &la, &e) != RL_OK) die("lock", &e);
    if (rl_lock_new(b, "bench:handoff", 13, &h.lock, &e) != RL_OK) die("lock", &e);
    pthread_t t;
    pthread_create(&t, NULL, handoff_waiter, &h);
    struct timespec settle = {0, 2000000}; /* let the waiter subscribe and sleep */
    for (int i = 0; i < rounds; i++) {
        if (rl_lock_acquire(la, 1, 10000, RL_WAIT_FOREVER, NULL, NULL, &e) != RL_OK) die("acquire", &e);
        set_turn(&h, 2 * i + 1);
        nanosleep(&settle, NULL);
        h.released_at[i] = now_s();
        if (rl_lock_release(la, 1, &e) != RL_OK) die("release", &e);
        await_turn(&h, 2 * i + 2);
    }
    pthread_join(t, NULL);
    double *lat = calloc((size_t)rounds, sizeof(double));
    for (int i = 0; i < rounds; i++) lat[i] = (h.acquired_at[i] - h.released_at[i]) * 1e3;
    qsort(lat, (size_t)rounds, sizeof(double), cmp_double);
    if (json) {
        printf("{\"measure\": \"core\", \"cycles\": %d, \"ping_per_s\": %.1f,\n"
               " \"rows\": [\n"
               "  {\"impl\": \"redlease-c-fixed\", \"label\": \"redlease C, fixed lease\", "
               "\"cycles_per_s\": %.1f},\n"
               "  {\"impl\": \"redlease-c\", \"label\": \"redlease C, watchdog\", "
               "\"cycles_per_s\": %.1f}],\n"
               " \"handoff\": {\"impl\": \"redlease-c\", \"label\": \"redlease C (two clients, "
               "one process)\", \"latencies_ms\": [",
               cycles, ping, fixed, watchdog);
        for (int i = 0; i < rounds; i++) printf("%s%.4f", i ? ", " : "", lat[i]);
        printf("]}}\n");
    } else {
        printf("hand-off latency over %d, ms: median %.3f  p90 %.3f  p99 %.3f  max %.3f\n", rounds,
               lat[rounds / 2], lat[rounds * 9 / 10], lat[rounds * 99 / 100], lat[rounds - 1]);
    }
    free(lat);
    free(h.released_at);
    free(h.acquired_at);
    rl_lock_free(la);
    rl_lock_free(h.lock);
    rl_client_free(a);
    rl_client_free(b);
    return 0;
}
