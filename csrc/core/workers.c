#include "workers.h"

#include <sched.h>
#include <stdlib.h>

#include "clock.h"
#include "threads.h"

enum { IDLE, QUEUED, RUNNING, AGAIN };

/* A worker that just ran a job spins this long (yielding) before it sleeps: a loop that answers
 * a completion with the next call would otherwise pay a thread wake-up per hand-off. */
#define SPIN_US 100

void rl_workers_init(rl_workers *w) {
    *w = (rl_workers){.head = NULL};
    atomic_init(&w->queued, 0);
    pthread_mutex_init(&w->mu, NULL);
    rl_cond_init(&w->more);
}

/* ---- the timer heap (mu held) ------------------------------------------------------------- */

static void heap_put(rl_workers *w, size_t i, rl_job *job) {
    w->timers[i] = job;
    job->timer_slot = i + 1;
}

static void sift_up(rl_workers *w, size_t i) {
    rl_job *job = w->timers[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (w->timers[parent]->timer_at <= job->timer_at) break;
        heap_put(w, i, w->timers[parent]);
        i = parent;
    }
    heap_put(w, i, job);
}

static void sift_down(rl_workers *w, size_t i) {
    rl_job *job = w->timers[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= w->ntimers) break;
        if (child + 1 < w->ntimers && w->timers[child + 1]->timer_at < w->timers[child]->timer_at)
            child++;
        if (job->timer_at <= w->timers[child]->timer_at) break;
        heap_put(w, i, w->timers[child]);
        i = child;
    }
    heap_put(w, i, job);
}

static void heap_remove(rl_workers *w, rl_job *job) {
    size_t i = job->timer_slot - 1;
    job->timer_slot = 0;
    rl_job *last = w->timers[--w->ntimers];
    if (last == job) return;
    heap_put(w, i, last);
    sift_up(w, i);
    sift_down(w, last->timer_slot - 1);
}

/* ---- jobs (mu held) ----------------------------------------------------------------------- */

/* 1 when the job became queued, so it needs a reference for the queue. */
static int schedule_locked(rl_workers *w, rl_job *job) {
    switch (job->state) {
    case IDLE:
        job->state = QUEUED;
        job->next = NULL;
        if (w->tail)
            w->tail->next = job;
        else
            w->head = job;
        w->tail = job;
        atomic_fetch_add_explicit(&w->queued, 1, memory_order_release);
        /* A spinning worker takes a job alone in the queue: waking a sleeper as well would cost
         * a system call and a thread that finds nothing (a loop's call after call, each alone). */
        if (w->idle && !(w->spinning && w->head == job)) pthread_cond_signal(&w->more);
        return 1;
    case RUNNING:
        job->state = AGAIN;
        return 0;
    default:
        return 0;
    }
}

static rl_job *pop_job(rl_workers *w) {
    rl_job *job = w->head;
    if (job) {
        w->head = job->next;
        if (!w->head) w->tail = NULL;
        job->state = RUNNING;
    }
    return job;
}

/* Fires due timers (all of them once stopping); returns the earliest time left, -1 none. The
 * jobs whose reference is to be given back are chained on *drop. */
static int64_t fire_timers(rl_workers *w, rl_job **drop) {
    int64_t now = rl_now_ms();
    while (w->ntimers > 0) {
        rl_job *job = w->timers[0];
        if (!w->stop && job->timer_at > now) return job->timer_at;
        heap_remove(w, job);
        if (!schedule_locked(w, job)) { /* already queued or running: its ref is not needed */
            job->drop_next = *drop;
            *drop = job;
        }
    }
    return -1;
}

static void drop_refs(rl_job *drop) {
    while (drop) {
        rl_job *next = drop->drop_next;
        drop->unref(drop);
        drop = next;
    }
}

static void spin_for_work(rl_workers *w) { /* mu held; returns with it held */
    w->spinning++;
    unsigned seen = atomic_load_explicit(&w->queued, memory_order_relaxed);
    pthread_mutex_unlock(&w->mu);
    /* The queue is watched through `queued`, not under mu: the thread queueing the next call
     * then never waits for mu behind a spinner (nor behind one the scheduler preempted). */
    int64_t until = rl_now_us() + SPIN_US;
    while (atomic_load_explicit(&w->queued, memory_order_acquire) == seen && rl_now_us() < until)
        sched_yield();
    pthread_mutex_lock(&w->mu);
    w->spinning--; /* under mu, with the queue looked at: a job queued from now on signals */
}

static void *worker_main(void *arg) {
    rl_workers *w = arg;
    int spun = 1;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        rl_job *drop = NULL;
        int64_t next_timer = fire_timers(w, &drop);
        rl_job *job = pop_job(w);
        if (drop) {
            pthread_mutex_unlock(&w->mu);
            drop_refs(drop);
            pthread_mutex_lock(&w->mu);
        }
        if (job) {
            pthread_mutex_unlock(&w->mu);
            job->run(job);
            pthread_mutex_lock(&w->mu);
            int again = job->state == AGAIN;
            job->state = IDLE;
            if (again) {
                schedule_locked(w, job); /* keeps the queue's reference */
            } else {
                pthread_mutex_unlock(&w->mu);
                job->unref(job);
                pthread_mutex_lock(&w->mu);
            }
            spun = 0;
            continue;
        }
        if (w->stop && w->ntimers == 0) break;
        if (!spun) {
            spun = 1;
            spin_for_work(w);
            continue;
        }
        w->idle++;
        if (next_timer >= 0)
            rl_cond_wait_until(&w->more, &w->mu, next_timer);
        else
            pthread_cond_wait(&w->more, &w->mu);
        w->idle--;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rl_workers_start(rl_workers *w) {
    pthread_mutex_lock(&w->mu);
    while (!w->stop && w->started < RL_WORKERS &&
           rl_thread_start(&w->threads[w->started], worker_main, w) == 0)
        w->started++;
    int rc = w->started > 0 && !w->stop ? 0 : -1; /* fewer workers still work */
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void rl_workers_stop(rl_workers *w) {
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->more);
    int started = w->started;
    w->started = 0;
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < started; i++)
        pthread_join(w->threads[i], NULL);
}

void rl_workers_destroy(rl_workers *w) {
    free(w->timers);
    w->timers = NULL;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->more);
}

void rl_workers_forget_after_fork(rl_workers *w) {
    w->head = w->tail = NULL;
    for (size_t i = 0; i < w->ntimers; i++)
        w->timers[i]->timer_slot = 0;
    w->ntimers = 0;
    w->started = 0;
    w->idle = 0;
    w->spinning = 0;
}

void rl_workers_schedule(rl_workers *w, rl_job *job) {
    pthread_mutex_lock(&w->mu);
    if (schedule_locked(w, job)) job->ref(job);
    pthread_mutex_unlock(&w->mu);
}

int rl_workers_schedule_new(rl_workers *w, rl_job *job) {
    pthread_mutex_lock(&w->mu);
    int rc = w->stop ? -1 : 0;
    if (rc == 0 && schedule_locked(w, job)) job->ref(job);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int rl_workers_timer_set(rl_workers *w, rl_job *job, int64_t at_ms) {
    pthread_mutex_lock(&w->mu);
    int rc = 0;
    job->timer_at = at_ms;
    if (job->timer_slot) {
        sift_up(w, job->timer_slot - 1);
        sift_down(w, job->timer_slot - 1);
    } else {
        if (w->ntimers == w->timers_cap) {
            size_t cap = w->timers_cap ? w->timers_cap * 2 : 64;
            rl_job **grown = realloc(w->timers, cap * sizeof *grown);
            if (grown) {
                w->timers = grown;
                w->timers_cap = cap;
            }
        }
        if (w->ntimers < w->timers_cap) {
            job->ref(job);
            w->timers[w->ntimers++] = job;
            sift_up(w, w->ntimers - 1);
        } else {
            rc = -1;
        }
    }
    if (rc == 0 && job->timer_slot == 1) pthread_cond_broadcast(&w->more); /* a new earliest */
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void rl_workers_timer_clear(rl_workers *w, rl_job *job) {
    pthread_mutex_lock(&w->mu);
    int armed = job->timer_slot != 0;
    if (armed) heap_remove(w, job);
    pthread_mutex_unlock(&w->mu);
    if (armed) job->unref(job);
}
