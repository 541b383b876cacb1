/* A multi-lock's (or RedLock's) acquire as an async call: the rounds of multilock.c, each member
 * taken with an async lock acquire (its wait woken by pub/sub, no thread), and the pauses between
 * rounds on the call's timer. Cancelled, it cancels the member acquire in flight and releases
 * every lock it took: nothing stays held. */
#include <stdatomic.h>
#include <stdlib.h>

#include "call.h"
#include "clock.h"
#include "error.h"
#include "multilock.h"

typedef struct ml_acquire {
    rl_call *k;
    rl_multilock *m;
    uint64_t context;
    rl_acquire_options o;
    rl_round r;
    int in_round;
    int64_t pause_until; /* > 0 while pausing */
    rl_call *member;     /* a member's acquire in flight */
    int pending;         /* a member's acquire that could not start: its outcome is in */
    atomic_int answered; /* its outcome is in: */
    rl_status member_st;
    rl_error member_err;
} ml_acquire;

static void member_done(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud) {
    (void)call, (void)value;
    ml_acquire *a = ud;
    a->member_st = st;
    if (err)
        a->member_err = *err;
    else
        rl_error_clear(&a->member_err);
    atomic_store(&a->answered, 1);
    rl_call_wake(a->k);
    rl_call_unkeep(a->k);
}

static void finish(ml_acquire *a, rl_status st, rl_error *err) {
    if (st == RL_OK && rl_call_cancelled(a->k)) {
        rl_error ignored;
        rl_multilock_release(a->m, a->context, &ignored);
        st = rl_fail(err, RL_ABORTED, "the acquire was cancelled; the locks it got are released");
    }
    rl_call_finish(a->k, st, 0, err);
}

static rl_status begin_round(ml_acquire *a, rl_error *err) {
    int64_t wait =
        a->o.wait_ms == RL_WAIT_FOREVER ? rl_round_forever_wait(a->m, a->o.lease_ms) : a->o.wait_ms;
    rl_status st = rl_round_begin(&a->r, a->m, a->context, wait, a->o.lease_ms, &a->o, err);
    a->in_round = st == RL_OK;
    return st;
}

/* The round is over: its outcome, or (a wait without end) the next round. 1 when a new round
 * began. */
static int end_round(ml_acquire *a, rl_error *err) {
    a->in_round = 0;
    rl_status st = rl_round_end(&a->r, err);
    if (st == RL_NOT_ACQUIRED && a->o.wait_ms == RL_WAIT_FOREVER && !rl_call_cancelled(a->k)) {
        st = begin_round(a, err);
        if (st == RL_OK) return 1;
    }
    finish(a, st, err);
    return 0;
}

static void cancelled(ml_acquire *a, rl_error *err) {
    if (a->in_round) rl_round_give_back(&a->r);
    a->in_round = 0;
    finish(a, rl_fail(err, RL_ABORTED, "the acquire was cancelled"), err);
}

static void step(rl_call *k, void *arg) {
    ml_acquire *a = arg;
    if (!a->k) a->k = k; /* once, before any member starts: member_done reads it */
    rl_error err;
    rl_error_clear(&err);
    if (a->member || a->pending) { /* a member's acquire was started */
        if (a->member && !atomic_load(&a->answered)) {
            if (rl_call_cancelled(k)) rl_call_cancel(a->member); /* its answer wakes us */
            return;
        }
        rl_call_free(a->member);
        a->member = NULL;
        a->pending = 0;
        if (rl_call_cancelled(k)) {
            if (a->member_st == RL_OK) a->r.taken[a->r.i] = 1; /* released with the rest */
            cancelled(a, &err);
            return;
        }
        int go = rl_round_answer(&a->r, a->member_st, &a->member_err, &err);
        if (go < 0) {
            rl_round_free(&a->r);
            finish(a, a->r.hard, &err);
            return;
        }
        if (go == 0 && !end_round(a, &err)) return;
        if (go > 0 && a->r.pause_ms > 0) {
            a->pause_until = rl_now_ms() + a->r.pause_ms;
            if (rl_call_timer(k, a->pause_until)) {
                rl_round_give_back(&a->r);
                finish(a, rl_fail(&err, RL_ERR_MEMORY, "out of memory arming a timer"), &err);
            }
            return;
        }
        if (go > 0 && !rl_round_tick(&a->r) && !end_round(a, &err)) return;
    } else if (a->pause_until > 0) { /* pausing between rounds */
        if (rl_call_cancelled(k)) {
            cancelled(a, &err);
            return;
        }
        if (rl_now_ms() < a->pause_until) return; /* the timer is still armed */
        a->pause_until = 0;
        if (!rl_round_tick(&a->r) && !end_round(a, &err)) return;
    } else if (!a->in_round) { /* the first step */
        rl_status st = rl_call_cancelled(k) ? rl_fail(&err, RL_ABORTED, "the acquire was cancelled")
                                            : begin_round(a, &err);
        if (st != RL_OK) {
            finish(a, st, &err);
            return;
        }
    }
    if (rl_call_cancelled(k)) {
        cancelled(a, &err);
        return;
    }
    rl_acquire_options member;
    while (!rl_round_next(&a->r, &member))
        if (!end_round(a, &err)) return;
    member.hook = NULL;
    atomic_store(&a->answered, 0);
    rl_call_keep(k); /* until member_done has run */
    rl_status st = rl_lock_acquire_async(a->m->locks[a->r.i], a->context, &member, member_done, a,
                                         &a->member, &err);
    if (st != RL_OK) { /* it did not start: its failure is the member's answer, next step */
        rl_call_unkeep(k);
        a->member = NULL;
        a->pending = 1;
        a->member_st = st;
        a->member_err = err;
        rl_call_wake(k);
    }
}

static void free_acquire(void *arg) {
    ml_acquire *a = arg;
    rl_round_free(&a->r); /* a round left by a call ended otherwise (after fork) */
    free(a);
}

rl_status rl_multilock_acquire_async(rl_multilock *m, uint64_t context,
                                     const rl_acquire_options *options, rl_done_fn done,
                                     void *userdata, rl_call **out, rl_error *err) {
    if (out) *out = NULL;
    rl_status st = rl_multilock_check(m, options, err);
    if (st != RL_OK) return st;
    ml_acquire *a = calloc(1, sizeof *a);
    if (!a) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    a->m = m;
    a->context = context;
    a->o = *options;
    a->o.hook = NULL; /* waits are woken, not sliced */
    atomic_init(&a->answered, 0);
    return rl_call_start(m->locks[0]->client, step, a, free_acquire, done, userdata, out, err);
}

/* ---- release ------------------------------------------------------------------------------ */

typedef struct ml_release {
    rl_multilock *m;
    uint64_t context;
} ml_release;

static void release_step(rl_call *k, void *arg) {
    ml_release *r = arg;
    rl_error err;
    rl_status st = rl_multilock_release(r->m, r->context, &err);
    rl_call_finish(k, st, 0, &err);
}

rl_status rl_multilock_release_async(rl_multilock *m, uint64_t context, rl_done_fn done,
                                     void *userdata, rl_call **out, rl_error *err) {
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!m) return rl_fail(err, RL_ERR_ARGUMENT, "multi-lock must not be NULL");
    ml_release *r = malloc(sizeof *r);
    if (!r) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    *r = (ml_release){m, context};
    return rl_call_start(m->locks[0]->client, release_step, r, free, done, userdata, out, err);
}
