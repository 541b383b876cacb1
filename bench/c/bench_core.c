/* Core figures: PING round trips per second vs acquire+release cycles per second on one
 * connection, and release-to-waiter hand-off latency between two clients.
 * Usage: bench_core REDIS_URL [cycles] [handoffs] [json [bursts]]
 * With "json", prints one JSON object (for bench/run.py) instead of the text lines, and the
 * cycles are run in `bursts` short bursts (default 8), each fixed-lease and watchdog burst
 * between two bursts of the bare script loop (bare_loop.c) on its own connection: each row is
 * reported with its median rate and the median of its ratios to the bare loop around it, which
 * a machine whose speed changes from second to second leaves far steadier than one long run. */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bare_loop.h"
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
    for (int i = 0; i < n; i++)
        freeReplyObject(redisCommand(c, "PING"));
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
    while (h->turn != turn)
        pthread_cond_wait(&h->changed, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void *handoff_waiter(void *arg) {
    handoff *h = arg;
    rl_error e;
    for (int i = 0; i < h->rounds; i++) {
        await_turn(h, 2 * i + 1);
        if (rl_lock_acquire(h->lock, 2, 10000, RL_WAIT_FOREVER, NULL, NULL, &e) != RL_OK)
            die("wait", &e);
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

static double median_of(const double *v, int n) {
    double *w = malloc((size_t)n * sizeof *w);
    memcpy(w, v, (size_t)n * sizeof *w);
    qsort(w, (size_t)n, sizeof *w, cmp_double);
    double m = n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
    free(w);
    return m;
}

static void print_list(const char *key, const double *v, int n) {
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? ", " : "", v[i]);
    printf("]");
}

/* One row of measure 1: median rate, the bursts' rates and, when given, the median of the
 * paired ratios to the bare loop and to two PINGs. */
static void print_row(const char *impl, const char *label, const double *rate,
                      const double *of_bare, const double *of_ping, int n, int last) {
    printf("  {\"impl\": \"%s\", \"label\": \"%s\", \"cycles_per_s\": %.1f", impl, label,
           median_of(rate, n));
    print_list("rounds_cycles_per_s", rate, n);
    if (of_bare) {
        printf(", \"of_bare\": %.4f, \"of_ping\": %.4f", median_of(of_bare, n),
               median_of(of_ping, n));
        print_list("rounds_of_bare", of_bare, n);
    }
    printf("}%s\n", last ? "]," : ",");
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    if (!url) url = "redis://127.0.0.1:6379";
    int cycles = argc > 2 ? atoi(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 200;
    int json = argc > 4 && strcmp(argv[4], "json") == 0;
    int bursts = json && argc > 5 ? atoi(argv[5]) : 8;
    if (bursts < 1) bursts = 1;
    rl_options o;
    rl_options_init(&o);
    o.pool_size = 1;
    rl_client *a, *b;
    rl_error e;
    if (rl_client_new(url, &o, &a, &e) != RL_OK || rl_client_new(url, &o, &b, &e) != RL_OK)
        die("client", &e);

    cycle_rate(a, 200, 10000); /* warm up: connection and script load */
    double ping, fixed, watchdog;
    double *r_ping = calloc((size_t)bursts, sizeof(double)),
           *r_bare = calloc((size_t)bursts, sizeof(double)),
           *r_fixed = calloc((size_t)bursts, sizeof(double)),
           *r_wd = calloc((size_t)bursts, sizeof(double)),
           *q_fixed = calloc((size_t)bursts, sizeof(double)),
           *q_wd = calloc((size_t)bursts, sizeof(double)),
           *p_fixed = calloc((size_t)bursts, sizeof(double)),
           *p_wd = calloc((size_t)bursts, sizeof(double));
    if (json) {
        bl_conn *bare = bl_open(url);
        if (!bare) die("bare loop", NULL);
        int n = cycles / bursts > 0 ? cycles / bursts : 1;
        bl_scripts(bare, 200);
        for (int k = 0; k < bursts; k++) {
            r_ping[k] = bl_ping(bare, n) / 2;
            double b0 = bl_scripts(bare, n);
            r_fixed[k] = cycle_rate(a, n, 10000);
            double b1 = bl_scripts(bare, n);
            r_wd[k] = cycle_rate(a, n, RL_LEASE_WATCHDOG);
            double b2 = bl_scripts(bare, n);
            if (b0 <= 0 || b1 <= 0 || b2 <= 0 || r_ping[k] <= 0) die("bare loop", NULL);
            r_bare[k] = b1;
            q_fixed[k] = r_fixed[k] / ((b0 + b1) / 2);
            q_wd[k] = r_wd[k] / ((b1 + b2) / 2);
            p_fixed[k] = r_fixed[k] / r_ping[k];
            p_wd[k] = r_wd[k] / r_ping[k];
        }
        bl_close(bare);
        ping = 0, fixed = 0, watchdog = 0; /* reported per burst below */
    } else {
        ping = ping_rate(url, cycles);
        fixed = cycle_rate(a, cycles, 10000);
        watchdog = cycle_rate(a, cycles, RL_LEASE_WATCHDOG);
    }
    if (!json) {
        printf("PING round trips/s (one connection):          %10.0f\n", ping);
        printf("acquire+release cycles/s, fixed lease:         %10.0f  (%.2f cycles per 2 PINGs)\n",
               fixed, fixed / (ping / 2));
        printf("acquire+release cycles/s, watchdog mode:       %10.0f  (%.2f cycles per 2 PINGs)\n",
               watchdog, watchdog / (ping / 2));
    }

    handoff h = {
        .rounds = rounds, .mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    h.released_at = calloc((size_t)rounds, sizeof(double));
    h.acquired_at = calloc((size_t)rounds, sizeof(double));
    rl_lock *la;
    if (rl_lock_new(a, "bench:handoff", 13, &la, &e) != RL_OK) die("lock", &e);
    if (rl_lock_new(b, "bench:handoff", 13, &h.lock, &e) != RL_OK) die("lock", &e);
    pthread_t t;
    pthread_create(&t, NULL, handoff_waiter, &h);
    struct timespec settle = {0, 2000000}; /* let the waiter subscribe and sleep */
    for (int i = 0; i < rounds; i++) {
        if (rl_lock_acquire(la, 1, 10000, RL_WAIT_FOREVER, NULL, NULL, &e) != RL_OK)
            die("acquire", &e);
        set_turn(&h, 2 * i + 1);
        nanosleep(&settle, NULL);
        h.released_at[i] = now_s();
        if (rl_lock_release(la, 1, &e) != RL_OK) die("release", &e);
        await_turn(&h, 2 * i + 2);
    }
    pthread_join(t, NULL);
    double *lat = calloc((size_t)rounds, sizeof(double));
    for (int i = 0; i < rounds; i++)
        lat[i] = (h.acquired_at[i] - h.released_at[i]) * 1e3;
    qsort(lat, (size_t)rounds, sizeof(double), cmp_double);
    if (json) {
        printf("{\"measure\": \"core\", \"cycles\": %d, \"bursts\": %d,\n \"rows\": [\n", cycles,
               bursts);
        print_row("redlease-c-fixed", "redlease C, fixed lease", r_fixed, q_fixed, p_fixed, bursts,
                  0);
        print_row("redlease-c", "redlease C, watchdog", r_wd, q_wd, p_wd, bursts, 0);
        print_row("bare-scripts", "bare script loop (beside the C rows)", r_bare, NULL, NULL,
                  bursts, 0);
        print_row("ping", "two PINGs (beside the C rows)", r_ping, NULL, NULL, bursts, 1);
        printf(" \"handoff\": {\"impl\": \"redlease-c\", \"label\": \"redlease C (two clients, "
               "one process)\", \"latencies_ms\": [");
        for (int i = 0; i < rounds; i++)
            printf("%s%.4f", i ? ", " : "", lat[i]);
        printf("]}}\n");
    } else {
        printf("hand-off latency over %d, ms: median %.3f  p90 %.3f  p99 %.3f  max %.3f\n", rounds,
               lat[rounds / 2], lat[rounds * 9 / 10], lat[rounds * 99 / 100], lat[rounds - 1]);
    }
    free(lat);
    free(r_ping), free(r_bare), free(r_fixed), free(r_wd);
    free(q_fixed), free(q_wd), free(p_fixed), free(p_wd);
    free(h.released_at);
    free(h.acquired_at);
    rl_lock_free(la);
    rl_lock_free(h.lock);
    rl_client_free(a);
    rl_client_free(b);
    return 0;
}
