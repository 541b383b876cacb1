/* A client's small pool of worker threads, with a job queue and timers: the async calls
 * (lock_async.c) run their network steps here, so that an event loop never blocks on Redis and a
 * waiting call costs no thread.
 *
 * A job is embedded in its owner and serialized: scheduling a job that is queued does nothing,
 * scheduling one that is running runs it once more after it returns. Queueing a job or arming a
 * timer takes a reference on its owner (job->ref), given back when the job has run or the timer is
 * disarmed (job->unref), so an owner outlives whatever may still run it. */
#ifndef RL_WORKERS_H
#define RL_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RL_WORKERS 4

typedef struct rl_job {
    struct rl_job *next, *drop_next;
    int state;         /* idle, queued, running, running and scheduled again */
    int64_t timer_at;  /* the armed timer's monotonic time (ms) */
    size_t timer_slot; /* its place in the heap + 1; 0 when not armed */
    void (*run)(struct rl_job *job);
    void (*ref)(struct rl_job *job);
    void (*unref)(struct rl_job *job);
} rl_job;

typedef struct rl_workers {
    pthread_mutex_t mu;
    pthread_cond_t more; /* a job or an earlier timer arrived, or stop */
    rl_job *head, *tail;
    rl_job **timers; /* min-heap on timer_at */
    size_t ntimers, timers_cap;
    pthread_t threads[RL_WORKERS];
    int started, idle, stop;
    int spinning;       /* workers looking for work before they sleep (workers.c) */
    atomic_uint queued; /* jobs queued so far: what a spinning worker watches, without mu */
} rl_workers;

void rl_workers_init(rl_workers *w);
/* Starts the threads on first use; -1 when they cannot be started (or the pool is stopped). */
int rl_workers_start(rl_workers *w);
/* Runs every job still queued and fires every timer at once, then joins the threads. */
void rl_workers_stop(rl_workers *w);
void rl_workers_destroy(rl_workers *w);
/* In a forked child: the threads are the parent's; queued jobs and timers are forgotten. */
void rl_workers_forget_after_fork(rl_workers *w);

void rl_workers_schedule(rl_workers *w, rl_job *job);
/* As rl_workers_schedule for a job not yet known to the pool; -1 once the pool is stopping (the
 * job would never run). */
int rl_workers_schedule_new(rl_workers *w, rl_job *job);
/* Arms (or moves) the job's timer: at `at_ms` the job is scheduled. -1 out of memory. */
int rl_workers_timer_set(rl_workers *w, rl_job *job, int64_t at_ms);
void rl_workers_timer_clear(rl_workers *w, rl_job *job);

#endif
