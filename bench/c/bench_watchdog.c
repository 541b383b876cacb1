/* Measure 4 (watchdog scale) and the core's half of measure 6 (bytes per held lock).
 *
 * For each size N: one client takes N watchdog-mode holds (N lock names, four threads), then
 * sits for `periods` watchdog periods while the watchdog renews them. Reported per size:
 *   - a renewal round's duration (wall time) and CPU time, measured on the watchdog thread;
 *   - round trips and script calls per round (rl_client_stats deltas over the window, which
 *     opens after a first round over all N, so that connecting is not counted);
 *   - process CPU per round from getrusage over the window (a cross-check: it also counts the
 *     event thread and the idle main thread);
 *   - holds lost (RL_EVENT_LOST events and rl_lock_lost on every lock) and how many of the N
 *     keys Redis still has with a live lease at the end;
 *   - malloc accounting (mallinfo2: in-use bytes plus mmapped blocks) per lock handle and per
 *     hold, taken right after a round ended, when no round buffer is alive.
 *
 * The round's timing comes from the core's own statistics (rl_client_stats: the latest round's
 * wall, CPU and network time, measured on the watchdog thread), sampled every millisecond by a
 * thread of this program; a round is recorded when the count of rounds moves.
 *
 * Prints one JSON object. Usage: bench_watchdog REDIS_URL watchdog_timeout_ms periods N... */
#include <hiredis/hiredis.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "redlease.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double process_cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static long long heap_bytes(void) {
    struct mallinfo2 m = mallinfo2();
    return (long long)(m.uordblks + m.hblkhd);
}

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench_watchdog: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

/* ---- rounds, seen through the core's statistics ----------------------------------------- */

typedef struct round_rec {
    double start, end, net_ms, cpu_ms;
    size_t holds, calls;
    long long heap_after; /* mallinfo2 right after the round was seen to end */
} round_rec;

#define MAX_ROUNDS 4096
static round_rec rounds_log[MAX_ROUNDS];
static size_t nrounds;
static pthread_mutex_t rounds_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct sampler {
    rl_client *client;
    atomic_int stop;
    pthread_t thread;
} sampler;

static void *sample_rounds(void *arg) {
    sampler *sm = arg;
    rl_stats seen;
    rl_client_stats(sm->client, &seen);
    while (!atomic_load(&sm->stop)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        rl_stats now;
        rl_client_stats(sm->client, &now);
        if (now.renew_rounds == seen.renew_rounds) continue;
        double end = now_s();
        round_rec r = {.start = end - (double)now.last_round_us / 1e6,
                       .end = end,
                       .net_ms = (double)now.last_round_net_us / 1e3,
                       .cpu_ms = (double)now.last_round_cpu_us / 1e3,
                       .holds = now.last_round_holds,
                       .calls = (size_t)((now.renew_calls - seen.renew_calls) /
                                         (now.renew_rounds - seen.renew_rounds)),
                       .heap_after = heap_bytes()};
        pthread_mutex_lock(&rounds_mu);
        if (nrounds < MAX_ROUNDS) rounds_log[nrounds++] = r;
        pthread_mutex_unlock(&rounds_mu);
        seen = now;
    }
    return NULL;
}

/* ---- one size ------------------------------------------------------------------------------ */

static atomic_long lost_events;

static char first_failure[256]; /* the first failed round's message, for the log */
static atomic_int failure_seen;

static void on_event(const rl_event *e, void *userdata) {
    (void)userdata;
    if (e->kind == RL_EVENT_LOST) atomic_fetch_add(&lost_events, 1);
    if (e->kind == RL_EVENT_RENEW_FAILED && !atomic_exchange(&failure_seen, 1))
        snprintf(first_failure, sizeof first_failure, "%s", e->message);
}

#define THREADS 4

typedef struct slice {
    rl_lock **locks;
    size_t from, to;
} slice;

static void *acquire_slice(void *arg) {
    slice *s = arg;
    rl_error e;
    for (size_t i = s->from; i < s->to; i++)
        if (rl_lock_acquire(s->locks[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e) != RL_OK)
            die("acquire", e.message);
    return NULL;
}

static redisContext *connect_url(const char *url) {
    char host[128];
    const char *h = url + 8, *colon = strchr(h, ':');
    if (strncmp(url, "redis://", 8) != 0 || !colon) die("url", "only redis://host:port");
    snprintf(host, sizeof host, "%.*s", (int)(colon - h), h);
    redisContext *c = redisConnect(host, atoi(colon + 1));
    if (!c || c->err) die("connect", url);
    return c;
}

/* How many of the n keys exist with a lease left (pipelined PTTL). */
static size_t live_keys(redisContext *rc, size_t n) {
    char name[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "bench:wd:%zu", i);
        redisAppendCommand(rc, "PTTL %s", name);
    }
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK) die("PTTL", rc->errstr);
        if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) live++;
        freeReplyObject(r);
    }
    return live;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run_size(const char *url, size_t n, int64_t timeout_ms, int periods, int first) {
    const int64_t period_ms = timeout_ms / 3;
    redisContext *rc = connect_url(url);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));

    rl_lock **locks = malloc(n * sizeof *locks); /* the benchmark's own array: not counted */
    if (!locks) die("malloc", "locks");
    atomic_store(&lost_events, 0);
    atomic_store(&failure_seen, 0);
    long long heap0 = heap_bytes();
    rl_options o;
    rl_options_init(&o);
    o.watchdog_timeout_ms = timeout_ms;
    o.on_event = on_event;
    rl_client *client;
    rl_error e;
    if (rl_client_new(url, &o, &client, &e) != RL_OK) die("client", e.message);
    long long heap_client = heap_bytes();
    sampler sm = {.client = client};
    atomic_init(&sm.stop, 0);
    pthread_create(&sm.thread, NULL, sample_rounds, &sm);
    char name[64];
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(name, sizeof name, "bench:wd:%zu", i);
        if (rl_lock_new(client, name, (size_t)len, &locks[i], &e) != RL_OK) die("lock", e.message);
    }
    long long heap_locks = heap_bytes();

    double t0 = now_s();
    pthread_t threads[THREADS];
    slice slices[THREADS];
    for (int t = 0; t < THREADS; t++) {
        slices[t] = (slice){locks, n * (size_t)t / THREADS, n * (size_t)(t + 1) / THREADS};
        pthread_create(&threads[t], NULL, acquire_slice, &slices[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    double acquired_at = now_s();

    /* One round over all n first (it may open the watchdog's connection), then the window. */
    for (int waited = 0; waited < 4 * period_ms + 1000; waited += 2) {
        int seen = 0;
        pthread_mutex_lock(&rounds_mu);
        for (size_t i = 0; i < nrounds && !seen; i++)
            seen = rounds_log[i].holds == n && rounds_log[i].start >= acquired_at;
        pthread_mutex_unlock(&rounds_mu);
        if (seen) break;
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    double window_start = now_s();
    pthread_mutex_lock(&rounds_mu);
    size_t first_round = nrounds;
    pthread_mutex_unlock(&rounds_mu);
    rl_stats s0, s1;
    rl_client_stats(client, &s0);
    double cpu0 = process_cpu_ms();
    struct timespec wait = {(time_t)(periods * period_ms / 1000),
                            (long)((periods * period_ms) % 1000) * 1000000L};
    nanosleep(&wait, NULL);
    /* and until the round in flight (if any) has ended, so that the stats count whole rounds */
    for (int i = 0; i < 200; i++) {
        rl_client_stats(client, &s1);
        pthread_mutex_lock(&rounds_mu);
        size_t logged = nrounds - first_round;
        pthread_mutex_unlock(&rounds_mu);
        if (logged >= s1.renew_rounds - s0.renew_rounds) break;
        struct timespec ms = {0, 5000000};
        nanosleep(&ms, NULL);
    }
    double cpu1 = process_cpu_ms();
    double window_s = now_s() - window_start;
    rl_client_stats(client, &s1);

    size_t lost = 0;
    for (size_t i = 0; i < n; i++)
        lost += rl_lock_lost(locks[i], 1, NULL) != 0;
    size_t live = live_keys(rc, n);

    /* full rounds of the window: started after every hold was taken, renewing all n */
    pthread_mutex_lock(&rounds_mu);
    size_t full = 0;
    double *dur = calloc(nrounds + 1, sizeof *dur), *cpu = calloc(nrounds + 1, sizeof *cpu),
           *net = calloc(nrounds + 1, sizeof *net);
    long long heap_held = -1;
    for (size_t i = 0; i < nrounds; i++) {
        round_rec *r = &rounds_log[i];
        if (r->holds != n || r->start < acquired_at) continue;
        if (heap_held < 0) heap_held = r->heap_after; /* the warm-up round */
        if (i < first_round) continue;
        dur[full] = (r->end - r->start) * 1e3;
        cpu[full] = r->cpu_ms;
        net[full] = r->net_ms;
        full++;
    }
    pthread_mutex_unlock(&rounds_mu);
    uint64_t rounds = s1.renew_rounds - s0.renew_rounds;
    double per_round = rounds ? 1.0 / (double)rounds : 0;

    printf("%s  {\"impl\": \"redlease-c\", \"holds\": %zu, \"acquire_s\": %.3f, "
           "\"window_s\": %.3f, \"periods\": %d, \"rounds\": %llu, \"full_rounds\": %zu,\n"
           "   \"round_ms\": [",
           first ? "" : ",\n", n, acquired_at - t0, window_s, periods, (unsigned long long)rounds,
           full);
    for (size_t i = 0; i < full; i++)
        printf("%s%.3f", i ? ", " : "", dur[i]);
    printf("], \"round_cpu_ms\": [");
    for (size_t i = 0; i < full; i++)
        printf("%s%.3f", i ? ", " : "", cpu[i]);
    printf("], \"round_net_ms\": [");
    for (size_t i = 0; i < full; i++)
        printf("%s%.3f", i ? ", " : "", net[i]);
    printf("],\n   \"round_ms_median\": %.3f, \"round_cpu_ms_median\": %.3f, "
           "\"round_net_ms_median\": %.3f,\n",
           median(dur, full), median(cpu, full), median(net, full));
    printf("   \"round_trips_per_round\": %.3f, \"calls_per_round\": %.3f, "
           "\"process_cpu_ms_per_round\": %.3f,\n",
           (double)(s1.renew_round_trips - s0.renew_round_trips) * per_round,
           (double)(s1.renew_calls - s0.renew_calls) * per_round, (cpu1 - cpu0) * per_round);
    printf("   \"lost\": %zu, \"lost_events\": %ld, \"live_keys\": %zu,\n", lost,
           atomic_load(&lost_events), live);
    rl_stats now; /* as of now, as lost_events: holds may go while the keys are read */
    rl_client_stats(client, &now);
    printf("   \"lost_by_reason\": {");
    for (int r = 1; r < RL_LOST_REASON_COUNT; r++)
        printf("%s\"%s\": %llu", r > 1 ? ", " : "", rl_lost_reason_name((rl_lost_reason)r),
               (unsigned long long)now.lost[r]);
    printf("}, \"failed_rounds\": %llu,\n", (unsigned long long)now.renew_failed_rounds);
    if (failure_seen) fprintf(stderr, "bench_watchdog: first failed round: %s\n", first_failure);
    printf("   \"heap_client\": %lld, \"bytes_per_lock_handle\": %.1f, \"bytes_per_hold\": %.1f, "
           "\"bytes_per_held_lock\": %.1f}",
           heap_client - heap0, (double)(heap_locks - heap_client) / (double)n,
           heap_held < 0 ? -1.0 : (double)(heap_held - heap_locks) / (double)n,
           heap_held < 0 ? -1.0 : (double)(heap_held - heap_client) / (double)n);
    fflush(stdout);
    free(dur);
    free(cpu);
    free(net);

    atomic_store(&sm.stop, 1);
    pthread_join(sm.thread, NULL);
    for (size_t i = 0; i < n; i++)
        rl_lock_free(locks[i]);
    rl_client_free(client); /* holds are not released: the flush below drops them */
    free(locks);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    redisFree(rc);
}

int main(int argc, char **argv) {
    if (argc < 5) die("usage", "bench_watchdog REDIS_URL watchdog_timeout_ms periods N...");
    const char *url = argv[1];
    int64_t timeout_ms = atoll(argv[2]);
    int periods = atoi(argv[3]);
    if (timeout_ms < 3 || periods < 1) die("usage", "timeout >= 3 ms, periods >= 1");
    printf("{\"measure\": \"watchdog\", \"watchdog_timeout_ms\": %lld, \"period_ms\": %lld, "
           "\"acquire_threads\": %d, \"rows\": [\n",
           (long long)timeout_ms, (long long)(timeout_ms / 3), THREADS);
    for (int i = 4; i < argc; i++)
        run_size(url, (size_t)atoll(argv[i]), timeout_ms, periods, i == 4);
    printf("\n]}\n");
    return 0;
}
