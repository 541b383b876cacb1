/* The operations the instruction-count guard measures (bench/callgrind.py runs this program
 * under `valgrind --tool=callgrind --instr-atstart=no`): only the measured loop is instrumented
 * (CALLGRIND_START/STOP_INSTRUMENTATION), so connecting, loading the scripts, warming up and
 * taking the 10,000 holds are not counted. Every thread of the process is counted (callgrind's
 * default, --separate-threads=no): an operation's work is spread over threads (a renewal round
 * runs on the watchdog thread, a hand-off's wake-up on the subscriber thread). What this
 * program's own threads do while they wait for the core (polling its statistics, waiting for
 * their turn) is left out with CALLGRIND_TOGGLE_COLLECT, which callgrind keeps per thread, so
 * that how long a wait lasts does not change the count.
 *
 * Modes (prints one JSON line: the mode and how many operations the window held):
 *   callgrind_ops URL cycle-fixed N [extra]     N acquire+release cycles, 10 s lease
 *   callgrind_ops URL cycle-watchdog N [extra]  the same in watchdog mode
 *   callgrind_ops URL watchdog HOLDS ROUNDS     ROUNDS renewal rounds over HOLDS holds
 *   callgrind_ops URL handoff N                 N hand-offs between two clients of the process
 * `extra` runs that many more cycles in the window than it reports: the guard's own test makes
 * a regression with it and checks that the guard fails. Outside valgrind the requests do
 * nothing, and the program runs as a plain benchmark. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "redlease.h"

static void fail(const char *what, const char *why) {
    fprintf(stderr, "callgrind_ops: %s: %s\n", what, why);
    exit(1);
}

static void die(const char *what, const rl_error *e) {
    fail(what, e ? e->message : "");
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Collection off, then on again, for the calling thread only (see the comment at the top). Only
 * inside the instrumented window: callgrind tells its threads apart only in instrumented code,
 * so a toggle made outside it could land on another thread's state. */
static atomic_int instrumented;

static void window_open(void) {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    atomic_store(&instrumented, 1);
}

static void window_close(void) {
    atomic_store(&instrumented, 0);
    CALLGRIND_STOP_INSTRUMENTATION;
}

#define NOT_COUNTED_BEGIN                                                                          \
    int toggled_ = atomic_load(&instrumented);                                                     \
    if (toggled_) CALLGRIND_TOGGLE_COLLECT
#define NOT_COUNTED_END                                                                            \
    if (toggled_) CALLGRIND_TOGGLE_COLLECT

static rl_client *client_new(const char *url, int64_t watchdog_timeout_ms) {
    rl_options o;
    rl_options_init(&o);
    o.pool_size = 1;
    if (watchdog_timeout_ms > 0) o.watchdog_timeout_ms = watchdog_timeout_ms;
    rl_client *c;
    rl_error e;
    if (rl_client_new(url, &o, &c, &e) != RL_OK) die("client", &e);
    return c;
}

static void cycles(rl_lock *l, int n, int64_t lease) {
    rl_error e;
    for (int i = 0; i < n; i++) {
        if (rl_lock_acquire(l, 1, lease, 0, NULL, NULL, &e) != RL_OK) die("acquire", &e);
        if (rl_lock_release(l, 1, &e) != RL_OK) die("release", &e);
    }
}

static int run_cycles(const char *url, int n, int extra, int64_t lease) {
    rl_client *c = client_new(url, 0);
    rl_lock *l;
    rl_error e;
    if (rl_lock_new(c, "callgrind:cycle", 15, &l, &e) != RL_OK) die("lock", &e);
    cycles(l, 50, lease); /* warm up: connection, scripts, first-time paths */
    window_open();
    cycles(l, n + extra, lease);
    window_close();
    rl_lock_free(l);
    rl_client_free(c);
    return n;
}

/* ---- watchdog rounds ------------------------------------------------------------------------ */

/* A window that cannot be counted as one operation's cost: a renewal round failed (it timed out
 * on a loaded machine and was retried) or a hold was lost. The caller measures again. */
#define NOT_COUNTABLE 3

static uint64_t rounds_now(rl_client *c, size_t *holds) {
    rl_stats s;
    rl_client_stats(c, &s);
    if (s.renew_failed_rounds > 0 || s.lost_total > 0) {
        fprintf(stderr, "callgrind_ops: watchdog: %llu failed round(s), %llu hold(s) lost\n",
                (unsigned long long)s.renew_failed_rounds, (unsigned long long)s.lost_total);
        exit(NOT_COUNTABLE);
    }
    if (holds) *holds = s.last_round_holds;
    return s.renew_rounds;
}

/* Waits (polling every millisecond) until `n` more rounds have ended after `since` and the last
 * of them renewed all `holds` (a round in flight when the holds were still being taken renews
 * fewer). Polling is not counted. Returns the count of rounds then. */
static uint64_t await_rounds(rl_client *c, uint64_t since, uint64_t n, size_t holds) {
    NOT_COUNTED_BEGIN;
    size_t last = 0;
    uint64_t now;
    for (int waited = 0; (now = rounds_now(c, &last)) < since + n || last != holds; waited++) {
        if (waited > 600000) fail("watchdog", "no renewal round of every hold in 10 min");
        sleep_ms(1);
    }
    NOT_COUNTED_END;
    return now;
}

static int run_watchdog(const char *url, size_t holds, int rounds) {
    /* A 9 s timeout: a round every 3 s, which a round over 10,000 holds may take at most. Under
     * valgrind on a loaded machine it needs about a second; a shorter period would see rounds
     * time out and be retried, and the count would vary with the load. */
    rl_client *c = client_new(url, 9000);
    rl_lock **locks = calloc(holds, sizeof *locks);
    if (!locks) die("calloc", NULL);
    rl_error e;
    char name[64];
    for (size_t i = 0; i < holds; i++) {
        int len = snprintf(name, sizeof name, "callgrind:wd:%zu", i);
        if (rl_lock_new(c, name, (size_t)len, &locks[i], &e) != RL_OK) die("lock", &e);
        if (rl_lock_acquire(locks[i], 1, RL_LEASE_WATCHDOG, 0, NULL, NULL, &e) != RL_OK)
            die("acquire", &e);
    }
    /* one whole round first (it may open the watchdog's connection), then the counted ones */
    uint64_t seen = await_rounds(c, rounds_now(c, NULL), 1, holds);
    window_open();
    /* every round from here renews all the holds: none is taken or released meanwhile */
    if (await_rounds(c, seen, (uint64_t)rounds, holds) != seen + (uint64_t)rounds)
        fail("watchdog", "a round went unseen");
    window_close();
    for (size_t i = 0; i < holds; i++)
        rl_lock_free(locks[i]);
    rl_client_free(c); /* the holds are not released: the caller flushes the server */
    free(locks);
    return rounds;
}

/* ---- hand-off ------------------------------------------------------------------------------- */

typedef struct handoff {
    rl_lock *lock;
    int rounds;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    int turn;    /* 2i+1: the waiter may start waiting; 2i+2: round i is done */
    int waiting; /* i+1: the waiter of round i is in its wait's loop (its hook ran) */
} handoff;

static void set_turn(handoff *h, int turn) {
    pthread_mutex_lock(&h->mu);
    h->turn = turn;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->mu);
}

static void await_value(handoff *h, const int *field, int value) {
    NOT_COUNTED_BEGIN;
    pthread_mutex_lock(&h->mu);
    while (*field != value)
        pthread_cond_wait(&h->changed, &h->mu);
    pthread_mutex_unlock(&h->mu);
    NOT_COUNTED_END;
}

static void await_turn(handoff *h, int turn) {
    await_value(h, &h->turn, turn);
}

/* The core calls a waiter's hook 50 ms into its wait, then every 50 ms; by the first call the
 * waiter has subscribed, tried once more and slept. The holder releases then: every hand-off
 * takes the same path (one such wake-up, then the release's message), whatever the load. */
typedef struct waiter_round {
    handoff *h;
    int round;
} waiter_round;

static int waiting_hook(void *userdata) {
    waiter_round *w = userdata;
    NOT_COUNTED_BEGIN;
    pthread_mutex_lock(&w->h->mu);
    w->h->waiting = w->round + 1;
    pthread_cond_broadcast(&w->h->changed);
    pthread_mutex_unlock(&w->h->mu);
    NOT_COUNTED_END;
    return 0;
}

static void *waiter(void *arg) {
    handoff *h = arg;
    rl_error e;
    for (int i = 0; i < h->rounds; i++) {
        await_turn(h, 2 * i + 1);
        waiter_round w = {h, i};
        if (rl_lock_acquire(h->lock, 2, 10000, RL_WAIT_FOREVER, waiting_hook, &w, &e) != RL_OK)
            die("wait", &e);
        if (rl_lock_release(h->lock, 2, &e) != RL_OK) die("release", &e);
        set_turn(h, 2 * i + 2);
    }
    return NULL;
}

/* Waits until the waiter's client has no wait and no subscription left: its unsubscribe is part
 * of the hand-off. Not counted. */
static void await_unsubscribed(rl_client *c) {
    NOT_COUNTED_BEGIN;
    for (int waited = 0;; waited++) {
        rl_stats s;
        rl_client_stats(c, &s);
        if (s.waiters == 0 && s.subscriptions == 0) break;
        if (waited > 60000) fail("handoff", "the waiter never unsubscribed");
        sleep_ms(1);
    }
    NOT_COUNTED_END;
}

static void handoffs(rl_lock *holder, rl_client *b, handoff *h, int from, int to) {
    rl_error e;
    for (int i = from; i < to; i++) {
        if (rl_lock_acquire(holder, 1, 10000, 0, NULL, NULL, &e) != RL_OK) die("acquire", &e);
        set_turn(h, 2 * i + 1);
        await_value(h, &h->waiting, i + 1);
        if (rl_lock_release(holder, 1, &e) != RL_OK) die("release", &e);
        await_turn(h, 2 * i + 2);
        await_unsubscribed(b);
    }
}

static int run_handoff(const char *url, int n) {
    enum { WARM = 3 };
    rl_client *a = client_new(url, 0), *b = client_new(url, 0);
    rl_lock *la;
    rl_error e;
    handoff h = {
        .rounds = WARM + n, .mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    if (rl_lock_new(a, "callgrind:handoff", 17, &la, &e) != RL_OK) die("lock", &e);
    if (rl_lock_new(b, "callgrind:handoff", 17, &h.lock, &e) != RL_OK) die("lock", &e);
    pthread_t t;
    if (pthread_create(&t, NULL, waiter, &h) != 0) die("thread", NULL);
    handoffs(la, b, &h, 0, WARM); /* the subscriber's connection, scripts, first-time paths */
    window_open();
    handoffs(la, b, &h, WARM, WARM + n);
    window_close();
    pthread_join(t, NULL);
    rl_lock_free(la);
    rl_lock_free(h.lock);
    rl_client_free(a);
    rl_client_free(b);
    return n;
}

int main(int argc, char **argv) {
    const char *usage = "usage: callgrind_ops URL cycle-fixed|cycle-watchdog N [extra]\n"
                        "       callgrind_ops URL watchdog HOLDS ROUNDS\n"
                        "       callgrind_ops URL handoff N\n";
    if (argc < 4 || atoi(argv[3]) <= 0) {
        fputs(usage, stderr);
        return 2;
    }
    const char *url = argv[1], *mode = argv[2];
    int n = atoi(argv[3]), ops;
    if (strcmp(mode, "cycle-fixed") == 0 || strcmp(mode, "cycle-watchdog") == 0) {
        int extra = argc > 4 ? atoi(argv[4]) : 0;
        ops = run_cycles(url, n, extra < 0 ? 0 : extra,
                         strcmp(mode, "cycle-fixed") == 0 ? 10000 : RL_LEASE_WATCHDOG);
    } else if (strcmp(mode, "watchdog") == 0 && argc == 5 && atoi(argv[4]) > 0) {
        ops = n * run_watchdog(url, (size_t)n, atoi(argv[4])); /* an operation: a hold renewed */
    } else if (strcmp(mode, "handoff") == 0) {
        ops = run_handoff(url, n);
    } else {
        fputs(usage, stderr);
        return 2;
    }
    printf("{\"mode\": \"%s\", \"ops\": %d}\n", mode, ops);
    return 0;
}
