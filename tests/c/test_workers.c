/* The async calls' worker pool (workers.c): a worker that just ran a job spins a moment for the
 * next one instead of a sleeper being woken, but jobs queued together still run side by side. */
#include <stdatomic.h>
#include <time.h>

#include "harness.h"
#include "workers.h"

typedef struct {
    rl_job job;
    int64_t sleep_ms;
    atomic_int ran, let_go; /* let_go: the pool is done with it (its unref) */
    atomic_llong ended_ms;
} timed_job;

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap(int64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void timed_run(rl_job *job) {
    timed_job *t = (timed_job *)job;
    if (t->sleep_ms) nap(t->sleep_ms);
    atomic_store(&t->ended_ms, mono_ms());
    atomic_store(&t->ran, 1);
}

static void no_ref(rl_job *job) {
    (void)job;
}

static void let_go(rl_job *job) {
    atomic_store(&((timed_job *)job)->let_go, 1);
}

static void timed_init(timed_job *t, int64_t sleep_ms) {
    *t = (timed_job){.job = {.run = timed_run, .ref = no_ref, .unref = let_go},
                     .sleep_ms = sleep_ms};
    atomic_init(&t->ran, 0);
    atomic_init(&t->let_go, 0);
    atomic_init(&t->ended_ms, 0);
}

/* Two jobs queued together, just after a job ended (its worker is spinning for the next): the
 * second must not wait behind the first, however long that one runs. */
TEST(workers_run_jobs_queued_together_side_by_side) {
    rl_workers w;
    rl_workers_init(&w);
    CHECK(rl_workers_start(&w) == 0);
    for (int round = 0; round < 3; round++) {
        timed_job first, slow, quick;
        timed_init(&first, 0);
        timed_init(&slow, 400);
        timed_init(&quick, 0);
        CHECK(rl_workers_schedule_new(&w, &first.job) == 0);
        while (!atomic_load(&first.ran)) /* no sleep: the worker is still spinning after it */
            ;
        long long queued = mono_ms();
        CHECK(rl_workers_schedule_new(&w, &slow.job) == 0);
        CHECK(rl_workers_schedule_new(&w, &quick.job) == 0);
        while (!atomic_load(&first.let_go) || !atomic_load(&slow.let_go) ||
               !atomic_load(&quick.let_go))
            nap(1);
        long long waited = atomic_load(&quick.ended_ms) - queued;
        CHECK_MSG(waited < 300, "round %d: the second job waited %lld ms behind the first", round,
                  waited);
    }
    rl_workers_stop(&w);
    rl_workers_destroy(&w);
}
