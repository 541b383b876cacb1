/* Async lock calls: the steps of lock.c run on the client's workers (workers.c) instead of the
 * caller's thread, and a waiting acquire is a notified subscriber ticket plus a timer, not a
 * blocked thread. Each call's steps are one serialized job, so its state needs no mutex; only
 * `cancelled` is touched from outside. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "call.h"
#include "clock.h"
#include "error.h"
#include "fork.h"
#include "lock.h"
#include "waiting.h"

typedef enum {
    OP_ACQUIRE,
    OP_RELEASE,
    OP_QUERY,
    OP_FORCE_UNLOCK,
    OP_INSPECT,
    OP_CONTEXT_ENDED,
    OP_STEPS /* another object's steps (call.h) */
} call_op;

struct rl_call {
    rl_job job; /* first: the job is the call */
    atomic_int refs;
    atomic_int cancelled;
    atomic_int finished;
    rl_client *client; /* referenced until the call is freed */
    rl_lock *lock;
    call_op op;
    uint64_t fork_generation; /* rl_fork_generation() when it started */
    uint64_t context;
    rl_query what;
    rl_inspection *inspection; /* inspect only: its answer until rl_call_inspection takes it */
    rl_done_fn done;
    void *userdata;
    /* acquire only */
    rl_acquire_options options;
    rl_attempt attempt;
    int waiting;           /* past the first try: subscribed, woken by the ticket or the timer */
    int64_t wait_start_us; /* a wait counted in the client's metrics since then; 0: none */
    int joined;
    rl_sub_ticket ticket;
    int64_t deadline, retry_at; /* monotonic ms; -1 none */
    /* OP_STEPS only */
    void (*steps)(rl_call *k, void *arg);
    void *arg;
    void (*free_arg)(void *arg);
};

static atomic_uint_fast64_t next_context = 1;

uint64_t rl_context_new(void) {
    return atomic_fetch_add(&next_context, 1);
}

static void call_ref(rl_job *job) {
    atomic_fetch_add(&((rl_call *)job)->refs, 1);
}

static void call_unref(rl_job *job) {
    rl_call *k = (rl_call *)job;
    if (atomic_fetch_sub(&k->refs, 1) != 1) return;
    rl_inspection_free(k->inspection);
    if (k->free_arg) k->free_arg(k->arg);
    rl_client_unref(k->client);
    free(k);
}

static void finish(rl_call *k, rl_status st, int64_t value, const rl_error *err) {
    atomic_store(&k->finished, 1);
    rl_workers_timer_clear(&k->client->workers, &k->job);
    if (k->done) k->done(k, st, value, err, k->userdata);
}

/* ---- acquire ------------------------------------------------------------------------------ */

static void woken(void *userdata) { /* the subscriber's thread, sub->mu held */
    rl_call *k = userdata;
    rl_workers_schedule(&k->client->workers, &k->job);
}

/* The outcome of the tries: leave the channel, record the hold or leave the fair queue, and a
 * hold granted to a call cancelled meanwhile is released at once. */
static void conclude(rl_call *k, rl_status st, rl_error *err) {
    if (k->wait_start_us) {
        rl_metrics_wait_ends(&k->client->metrics, (uint64_t)(rl_now_us() - k->wait_start_us));
        k->wait_start_us = 0;
    }
    if (k->joined) {
        rl_wait_leave(&k->ticket);
        k->joined = 0;
    }
    if (st == RL_NOT_ACQUIRED && atomic_load(&k->cancelled))
        st = rl_fail(err, RL_ABORTED, "the acquire was cancelled");
    st = rl_acquire_end(k->lock, k->context, &k->attempt, &k->options, st, err);
    if (st == RL_OK && atomic_load(&k->cancelled)) {
        rl_error release_err;
        rl_status released = rl_lock_release(k->lock, k->context, &release_err);
        st =
            released == RL_OK
                ? rl_fail(err, RL_ABORTED, "the acquire was cancelled; the hold it got is released")
                : rl_fail(err, RL_ABORTED,
                          "the acquire was cancelled; releasing the hold it got failed: %s",
                          release_err.message);
    }
    finish(k, st, 0, err);
}

static rl_status try_now(rl_call *k, rl_error *err) {
    int64_t hint = -1;
    rl_status st = rl_acquire_try(k->lock, &k->attempt, k->options.wait_ms != 0, &hint, err);
    k->retry_at = st == RL_NOT_ACQUIRED && hint >= 0 ? rl_now_ms() + hint : -1;
    return st;
}

static int64_t earliest(int64_t a, int64_t b) {
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* While leaving the lock to the waiter our release woke (wake_grace.c), observing its channel as
 * the blocking acquire does: RL_OK once that waiter's chance is over (the channel's next message,
 * or the grace's or the wait's end), else RL_NOT_ACQUIRED. */
static rl_status yield_over(rl_call *k, rl_status polled, int64_t now) {
    if (polled != RL_OK && now < earliest(k->deadline, k->attempt.yield_until))
        return RL_NOT_ACQUIRED;
    rl_wait_observe(&k->ticket, 0, 0);
    k->attempt.yield_until = -1;
    return RL_OK;
}

/* When the call's timer should fire next: its deadline, a retry, the end of a yield. */
static int64_t next_wake(const rl_call *k, int64_t recheck) {
    int64_t at = earliest(earliest(k->deadline, k->retry_at), recheck);
    return earliest(at, k->attempt.yield_until);
}

/* The first try; when it must wait: subscribe, then try again (no release can slip between). */
static void acquire_first(rl_call *k, rl_error *err) {
    rl_lock *l = k->lock;
    rl_status st = atomic_load(&k->cancelled)
                       ? rl_fail(err, RL_ABORTED, "the acquire was cancelled")
                       : rl_acquire_begin(l, k->context, &k->options, &k->attempt, err);
    if (st != RL_OK) {
        finish(k, st, 0, err);
        return;
    }
    int64_t wait_ms = k->options.wait_ms;
    k->deadline = wait_ms < 0 ? -1 : rl_now_ms() + wait_ms;
    k->retry_at = -1;
    /* Yielding to a waiter we woke (only an acquire that may wait does): its chance first. */
    int yielding = k->attempt.yield_until >= 0;
    st = yielding ? RL_NOT_ACQUIRED : try_now(k, err);
    if (st == RL_NOT_ACQUIRED && wait_ms != 0) {
        size_t len;
        char *channel = rl_lock_wait_channel(l, k->attempt.owner, k->attempt.owner_len, &len);
        st = channel ? rl_wait_join_notified(k->client, channel, len, &k->ticket, woken, k, err)
                     : rl_fail(err, RL_ERR_MEMORY, "out of memory");
        free(channel);
        if (st == RL_OK) {
            k->joined = 1;
            k->waiting = 1;
            k->wait_start_us = rl_now_us();
            rl_metrics_wait_begins(&k->client->metrics);
            if (yielding) rl_wait_observe(&k->ticket, 1, k->attempt.yield_floor);
            st = yielding ? RL_NOT_ACQUIRED : try_now(k, err); /* after joining: no wake missed */
        }
    }
    if (st != RL_NOT_ACQUIRED || wait_ms == 0) {
        conclude(k, st, err);
        return;
    }
    if (rl_workers_timer_set(&k->client->workers, &k->job, next_wake(k, -1)))
        conclude(k, rl_fail(err, RL_ERR_MEMORY, "out of memory arming a timer"), err);
}

/* Woken by the ticket, the timer or a cancel. */
static void acquire_again(rl_call *k, rl_error *err) {
    if (atomic_load(&k->cancelled)) {
        conclude(k, rl_fail(err, RL_ABORTED, "the acquire was cancelled"), err);
        return;
    }
    int64_t recheck = -1;
    rl_status st = rl_wait_poll(k->client, &k->ticket, &recheck, woken, k, err);
    int64_t now = rl_now_ms();
    if (k->attempt.yield_until >= 0 && (st == RL_OK || st == RL_NOT_ACQUIRED))
        st = yield_over(k, st, now);
    if (st == RL_OK || (st == RL_NOT_ACQUIRED && k->retry_at >= 0 && now >= k->retry_at))
        st = try_now(k, err);
    if (st != RL_NOT_ACQUIRED || (k->deadline >= 0 && rl_now_ms() >= k->deadline)) {
        conclude(k, st, err); /* acquired, failed, or out of time */
        return;
    }
    int64_t at = next_wake(k, recheck);
    if (at < 0)
        rl_workers_timer_clear(&k->client->workers, &k->job);
    else if (rl_workers_timer_set(&k->client->workers, &k->job, at))
        conclude(k, rl_fail(err, RL_ERR_MEMORY, "out of memory arming a timer"), err);
}

/* ---- every call --------------------------------------------------------------------------- */

static void step(rl_job *job) {
    rl_call *k = (rl_call *)job;
    if (atomic_load(&k->finished)) return;
    rl_error err;
    rl_error_clear(&err);
    if (k->fork_generation != rl_fork_generation()) {
        /* A parent's call, run in a forked child (cancelled or freed there): its subscription,
         * timer and queue place were the parent's and are gone; it only ends, touching none. */
        k->joined = 0;
        k->wait_start_us = 0;
        finish(k, rl_fail(&err, RL_ERR_CLOSED, "the call was started before fork(), in the parent"),
               0, &err);
        return;
    }
    rl_status st;
    int64_t value = 0;
    int deleted = 0;
    switch (k->op) {
    case OP_ACQUIRE:
        if (k->waiting)
            acquire_again(k, &err);
        else
            acquire_first(k, &err);
        return;
    case OP_RELEASE:
        st = rl_lock_release(k->lock, k->context, &err);
        break;
    case OP_QUERY:
        st = rl_lock_query(k->lock, k->what, k->context, &value, &err);
        break;
    case OP_FORCE_UNLOCK:
        st = rl_lock_force_unlock(k->lock, &deleted, &err);
        value = deleted;
        break;
    case OP_INSPECT:
        st = rl_inspect(k->client, k->lock->name, k->lock->name_len, &k->inspection, &err);
        break;
    case OP_STEPS:
        k->steps(k, k->arg);
        return;
    default: /* OP_CONTEXT_ENDED */
        rl_client_context_ended(k->client, k->context);
        st = RL_OK;
        break;
    }
    finish(k, st, value, &err);
}

static rl_status start(rl_client *c, rl_lock *l, call_op op, uint64_t context, rl_done_fn done,
                       void *userdata, rl_call **made, rl_error *err) {
    rl_status st = rl_client_enter(c, err); /* its reference becomes the call's */
    if (st != RL_OK) return st;
    rl_call *k = calloc(1, sizeof *k);
    if (!k) {
        rl_client_leave(c);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    k->job.run = step;
    k->job.ref = call_ref;
    k->job.unref = call_unref;
    atomic_init(&k->refs, 1);
    atomic_init(&k->cancelled, 0);
    atomic_init(&k->finished, 0);
    k->client = c;
    k->lock = l;
    k->op = op;
    k->fork_generation = rl_fork_generation();
    k->context = context;
    k->done = done;
    k->userdata = userdata;
    k->deadline = k->retry_at = -1;
    *made = k;
    return RL_OK;
}

/* Hands the call to the workers; *out gets the caller's reference. */
static rl_status launch(rl_call *k, rl_call **out, rl_error *err) {
    rl_workers *w = &k->client->workers;
    if (rl_workers_start(w) != 0 || rl_workers_schedule_new(w, &k->job) != 0) {
        rl_status st = atomic_load(&k->client->closed)
                           ? rl_fail(err, RL_ERR_CLOSED, "the client is closed")
                           : rl_fail(err, RL_ERR_MEMORY, "cannot start the worker threads");
        call_unref(&k->job);
        return st;
    }
    if (out)
        *out = k;
    else
        call_unref(&k->job);
    return RL_OK;
}

static rl_status lock_call(rl_lock *l, call_op op, uint64_t context, rl_done_fn done,
                           void *userdata, rl_call **out, rl_call **made, rl_error *err) {
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    if (!done || !out) return rl_fail(err, RL_ERR_ARGUMENT, "done and out must not be NULL");
    return start(l->client, l, op, context, done, userdata, made, err);
}

rl_status rl_lock_acquire_async(rl_lock *l, uint64_t context, const rl_acquire_options *options,
                                rl_done_fn done, void *userdata, rl_call **out, rl_error *err) {
    if (!options) {
        rl_error_clear(err);
        return rl_fail(err, RL_ERR_ARGUMENT, "options must not be NULL");
    }
    rl_call *k = NULL;
    rl_status st = lock_call(l, OP_ACQUIRE, context, done, userdata, out, &k, err);
    if (st != RL_OK) return st;
    k->options = *options;
    k->options.hook = NULL; /* waits are woken, not sliced */
    return launch(k, out, err);
}

rl_status rl_lock_release_async(rl_lock *l, uint64_t context, rl_done_fn done, void *userdata,
                                rl_call **out, rl_error *err) {
    rl_call *k = NULL;
    rl_status st = lock_call(l, OP_RELEASE, context, done, userdata, out, &k, err);
    return st == RL_OK ? launch(k, out, err) : st;
}

rl_status rl_lock_query_async(rl_lock *l, rl_query what, uint64_t context, rl_done_fn done,
                              void *userdata, rl_call **out, rl_error *err) {
    if (what < RL_QUERY_LOCKED || what > RL_QUERY_REMAINING) {
        rl_error_clear(err);
        return rl_fail(err, RL_ERR_ARGUMENT, "unknown query %d", (int)what);
    }
    rl_call *k = NULL;
    rl_status st = lock_call(l, OP_QUERY, context, done, userdata, out, &k, err);
    if (st != RL_OK) return st;
    k->what = what;
    return launch(k, out, err);
}

rl_status rl_lock_force_unlock_async(rl_lock *l, rl_done_fn done, void *userdata, rl_call **out,
                                     rl_error *err) {
    rl_call *k = NULL;
    rl_status st = lock_call(l, OP_FORCE_UNLOCK, 0, done, userdata, out, &k, err);
    return st == RL_OK ? launch(k, out, err) : st;
}

rl_status rl_lock_inspect_async(rl_lock *l, rl_done_fn done, void *userdata, rl_call **out,
                                rl_error *err) {
    rl_call *k = NULL;
    rl_status st = lock_call(l, OP_INSPECT, 0, done, userdata, out, &k, err);
    return st == RL_OK ? launch(k, out, err) : st;
}

rl_inspection *rl_call_inspection(rl_call *k) {
    if (!k || k->op != OP_INSPECT || !atomic_load(&k->finished)) return NULL;
    rl_inspection *in = k->inspection;
    k->inspection = NULL;
    return in;
}

void rl_client_context_ended_later(rl_client *c, uint64_t context) {
    rl_call *k = NULL;
    if (rl_client_enter(c, NULL) != RL_OK) return;
    if (start(c, NULL, OP_CONTEXT_ENDED, context, NULL, NULL, &k, NULL) == RL_OK &&
        launch(k, NULL, NULL) != RL_OK) /* no workers: release them here, waiting */
        rl_client_context_ended(c, context);
    rl_client_leave(c);
}

rl_status rl_call_start(rl_client *c, void (*steps)(rl_call *call, void *arg), void *arg,
                        void (*free_arg)(void *arg), rl_done_fn done, void *userdata, rl_call **out,
                        rl_error *err) {
    rl_error_clear(err);
    if (out) *out = NULL;
    rl_call *k = NULL;
    rl_status st = !done || !out ? rl_fail(err, RL_ERR_ARGUMENT, "done and out must not be NULL")
                                 : start(c, NULL, OP_STEPS, 0, done, userdata, &k, err);
    if (st != RL_OK) {
        if (free_arg) free_arg(arg);
        return st;
    }
    k->steps = steps;
    k->arg = arg;
    k->free_arg = free_arg;
    return launch(k, out, err);
}

int rl_call_cancelled(const rl_call *k) {
    return atomic_load(&((rl_call *)k)->cancelled);
}

void rl_call_finish(rl_call *k, rl_status st, int64_t value, const rl_error *err) {
    finish(k, st, value, err);
}

void rl_call_wake(void *call) {
    rl_call *k = call;
    rl_workers_schedule(&k->client->workers, &k->job);
}

int rl_call_timer(rl_call *k, int64_t at_ms) {
    if (at_ms < 0) {
        rl_workers_timer_clear(&k->client->workers, &k->job);
        return 0;
    }
    return rl_workers_timer_set(&k->client->workers, &k->job, at_ms);
}

void rl_call_keep(rl_call *k) {
    call_ref(&k->job);
}

void rl_call_unkeep(rl_call *k) {
    call_unref(&k->job);
}

rl_client *rl_call_client(const rl_call *k) {
    return k->client;
}

void rl_call_cancel(rl_call *k) {
    if (!k || atomic_exchange(&k->cancelled, 1) || atomic_load(&k->finished)) return;
    rl_workers_schedule(&k->client->workers, &k->job);
}

void rl_call_free(rl_call *k) {
    if (!k) return;
    rl_call_cancel(k);
    call_unref(&k->job);
}
