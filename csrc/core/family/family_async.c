/* The family's async calls (for event loops): a wait of rl_wait_for's shape that costs no
 * thread. Its tries run on the client's workers (call.h); between them it is a notified
 * subscriber ticket plus a timer, as a lock's async acquire (lock_async.c). A cancelled wait
 * leaves nothing taken: what a try got after the cancel is given back (steps->undo). */
#include <stdlib.h>

#include "call.h"
#include "clock.h"
#include "error.h"
#include "family.h"
#include "waiting.h"

typedef struct family_wait {
    const rl_wait_steps *steps;
    void *arg;
    rl_client *client;
    const char *channel; /* the object's: it outlives the call */
    size_t channel_len;
    int every, joined;
    int64_t wait_ms, deadline, retry_at; /* monotonic ms; -1 none */
    rl_sub_ticket ticket;
} family_wait;

static int64_t earliest(int64_t a, int64_t b) {
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static void conclude(rl_call *k, family_wait *w, rl_status st, rl_error *err) {
    if (w->joined) {
        rl_wait_leave(&w->ticket);
        w->joined = 0;
    }
    int cancelled = rl_call_cancelled(k);
    if (st == RL_OK && cancelled) {
        if (w->steps->undo) w->steps->undo(w->arg);
        st = rl_fail(err, RL_ABORTED, "the wait was cancelled; what it got is given back");
    } else if (st == RL_NOT_ACQUIRED && cancelled) {
        st = rl_fail(err, RL_ABORTED, "the wait was cancelled");
    } else if (st == RL_NOT_ACQUIRED && w->steps->ran_out) {
        w->steps->ran_out(w->arg, w->wait_ms, err);
    }
    rl_call_finish(k, st, 0, err);
}

static rl_status attempt(family_wait *w, rl_error *err) {
    int64_t hint = -1;
    rl_status st = w->steps->attempt(w->arg, &hint, err);
    w->retry_at = st == RL_NOT_ACQUIRED && hint >= 0 ? rl_now_ms() + hint : -1;
    return st;
}

static void arm(rl_call *k, family_wait *w, int64_t recheck, rl_error *err) {
    if (rl_call_timer(k, earliest(earliest(w->deadline, w->retry_at), recheck)))
        conclude(k, w, rl_fail(err, RL_ERR_MEMORY, "out of memory arming a timer"), err);
}

/* The first step tries; when it must wait, it subscribes, then tries again (no message sent
 * between the two is missed). Later steps: woken by the ticket, the timer or a cancel. */
static void wait_step(rl_call *k, void *arg) {
    family_wait *w = arg;
    rl_error err;
    rl_error_clear(&err);
    if (rl_call_cancelled(k)) {
        conclude(k, w, RL_NOT_ACQUIRED, &err);
        return;
    }
    rl_status st;
    int64_t recheck = -1;
    if (!w->joined) {
        w->deadline = w->wait_ms < 0 ? -1 : rl_now_ms() + w->wait_ms;
        st = attempt(w, &err);
        if (st == RL_NOT_ACQUIRED && w->wait_ms != 0) {
            st = rl_wait_join_notified_every(w->client, w->channel, w->channel_len, w->every,
                                             &w->ticket, rl_call_wake, k, &err);
            if (st == RL_OK) {
                w->joined = 1;
                st = attempt(w, &err);
            }
        }
    } else {
        st = rl_wait_poll(w->client, &w->ticket, &recheck, rl_call_wake, k, &err);
        if (st == RL_OK ||
            (st == RL_NOT_ACQUIRED && w->retry_at >= 0 && rl_now_ms() >= w->retry_at))
            st = attempt(w, &err);
    }
    if (st != RL_NOT_ACQUIRED || !w->joined || (w->deadline >= 0 && rl_now_ms() >= w->deadline))
        conclude(k, w, st, &err); /* done, failed, one try, or out of time */
    else
        arm(k, w, recheck, &err);
}

static void free_wait(void *arg) {
    family_wait *w = arg;
    if (w->steps->free_arg) w->steps->free_arg(w->arg);
    free(w);
}

rl_status rl_wait_for_async(rl_client *c, const char *channel, size_t channel_len, int every,
                            const rl_wait_steps *steps, void *arg, int64_t wait_ms, rl_done_fn done,
                            void *userdata, rl_call **out, rl_error *err) {
    family_wait *w = calloc(1, sizeof *w);
    if (!w) {
        if (steps->free_arg) steps->free_arg(arg);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    *w = (family_wait){.steps = steps,
                       .arg = arg,
                       .client = c,
                       .channel = channel,
                       .channel_len = channel_len,
                       .every = every,
                       .wait_ms = wait_ms,
                       .deadline = -1,
                       .retry_at = -1};
    return rl_call_start(c, wait_step, w, free_wait, done, userdata, out, err);
}

/* ---- one step -------------------------------------------------------------------------- */

typedef struct one_step {
    rl_async_fn fn;
    void *arg;
} one_step;

static void run_once(rl_call *k, void *arg) {
    one_step *o = arg;
    rl_error err;
    rl_error_clear(&err);
    int64_t value = 0;
    rl_status st = o->fn(o->arg, &value, &err);
    rl_call_finish(k, st, value, &err);
}

rl_status rl_client_run_async(rl_client *c, rl_async_fn fn, void *arg, rl_done_fn done,
                              void *userdata, rl_call **out, rl_error *err) {
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!c || !fn) return rl_fail(err, RL_ERR_ARGUMENT, "client and fn must not be NULL");
    one_step *o = malloc(sizeof *o);
    if (!o) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    *o = (one_step){fn, arg};
    return rl_call_start(c, run_once, o, free, done, userdata, out, err);
}
