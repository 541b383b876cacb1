/* The family's async calls from Python (redlease.asyncio's semaphores and latches): their waits
 * (the core's rl_*_async) and their calls of one round trip, run on the core's workers. The
 * arguments are converted here and kept in the Call until it ends; the core does the rest. */
#include "async.h" /* first: Python.h before any system header */

#include <stdio.h>
#include <string.h>

typedef enum { ANSWER_NONE, ANSWER_BOOL, ANSWER_INT } answer_kind;
typedef enum { ON_SEMAPHORE, ON_PERMITS, ON_LATCH } target_kind;
typedef enum { ARG_NONE, ARG_COUNT, ARG_ID, ARG_ID_LEASE } arg_kind;

typedef enum {
    SEM_RELEASE,
    SEM_TRY_SET,
    SEM_ADD,
    SEM_AVAILABLE,
    SEM_DRAIN,
    PERMIT_RELEASE,
    PERMIT_UPDATE_LEASE,
    PERMIT_TRY_SET,
    PERMIT_ADD,
    PERMIT_AVAILABLE,
    LATCH_TRY_SET,
    LATCH_COUNT_DOWN,
    LATCH_COUNT,
    LATCH_DELETE,
} family_op;

static const struct {
    const char *name;
    target_kind on;
    arg_kind arg;
    answer_kind answer;
} ops[] = {
    [SEM_RELEASE] = {"semaphore.release", ON_SEMAPHORE, ARG_COUNT, ANSWER_NONE},
    [SEM_TRY_SET] = {"semaphore.try_set_permits", ON_SEMAPHORE, ARG_COUNT, ANSWER_BOOL},
    [SEM_ADD] = {"semaphore.add_permits", ON_SEMAPHORE, ARG_COUNT, ANSWER_NONE},
    [SEM_AVAILABLE] = {"semaphore.available_permits", ON_SEMAPHORE, ARG_NONE, ANSWER_INT},
    [SEM_DRAIN] = {"semaphore.drain_permits", ON_SEMAPHORE, ARG_NONE, ANSWER_INT},
    [PERMIT_RELEASE] = {"permits.release", ON_PERMITS, ARG_ID, ANSWER_NONE},
    [PERMIT_UPDATE_LEASE] = {"permits.update_lease_time", ON_PERMITS, ARG_ID_LEASE, ANSWER_NONE},
    [PERMIT_TRY_SET] = {"permits.try_set_permits", ON_PERMITS, ARG_COUNT, ANSWER_BOOL},
    [PERMIT_ADD] = {"permits.add_permits", ON_PERMITS, ARG_COUNT, ANSWER_NONE},
    [PERMIT_AVAILABLE] = {"permits.available_permits", ON_PERMITS, ARG_NONE, ANSWER_INT},
    [LATCH_TRY_SET] = {"latch.try_set_count", ON_LATCH, ARG_COUNT, ANSWER_BOOL},
    [LATCH_COUNT_DOWN] = {"latch.count_down", ON_LATCH, ARG_NONE, ANSWER_NONE},
    [LATCH_COUNT] = {"latch.count", ON_LATCH, ARG_NONE, ANSWER_INT},
    [LATCH_DELETE] = {"latch.delete", ON_LATCH, ARG_NONE, ANSWER_BOOL},
};

/* The core call of one step, on a worker (no GIL: only the Call's C fields). */
static rl_status run(void *arg, int64_t *value, rl_error *err) {
    rlpy_call *c = arg;
    int yes = 0;
    rl_status st;
    switch ((family_op)c->op) {
    case SEM_RELEASE:
        return rl_semaphore_release(c->target, c->a, err);
    case SEM_TRY_SET:
        st = rl_semaphore_try_set_permits(c->target, c->a, &yes, err);
        break;
    case SEM_ADD:
        return rl_semaphore_add_permits(c->target, c->a, err);
    case SEM_AVAILABLE:
        return rl_semaphore_available(c->target, value, err);
    case SEM_DRAIN:
        return rl_semaphore_drain(c->target, value, err);
    case PERMIT_RELEASE:
        return rl_expirable_release(c->target, c->id, err);
    case PERMIT_UPDATE_LEASE:
        return rl_expirable_update_lease(c->target, c->id, c->b, err);
    case PERMIT_TRY_SET:
        st = rl_expirable_try_set_permits(c->target, c->a, &yes, err);
        break;
    case PERMIT_ADD:
        return rl_expirable_add_permits(c->target, c->a, err);
    case PERMIT_AVAILABLE:
        return rl_expirable_available(c->target, value, err);
    case LATCH_TRY_SET:
        st = rl_countdown_try_set_count(c->target, c->a, &yes, err);
        break;
    case LATCH_COUNT_DOWN:
        return rl_countdown_count_down(c->target, err);
    case LATCH_COUNT:
        return rl_countdown_count(c->target, value, err);
    default: /* LATCH_DELETE */
        st = rl_countdown_delete(c->target, &yes, err);
        break;
    }
    *value = yes;
    return st;
}

PyObject *rlpy_run_answer(const rlpy_call *c) {
    switch (ops[c->op].answer) {
    case ANSWER_BOOL:
        return PyBool_FromLong(c->value != 0);
    case ANSWER_INT:
        return PyLong_FromLongLong(c->value);
    default:
        return Py_NewRef(Py_None);
    }
}

static void *target_of(PyObject *obj, target_kind on, rl_client **client) {
    switch (on) {
    case ON_SEMAPHORE:
        return rlpy_semaphore_core(obj, client);
    case ON_PERMITS:
        return rlpy_expirable_core(obj, client);
    default:
        return rlpy_countdown_core(obj, client);
    }
}

/* A permit id argument into the Call (the core checks its form). */
static int take_id(rlpy_call *c, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "a permit id is a str, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    const char *id = PyUnicode_AsUTF8AndSize(arg, &len);
    if (!id) return -1;
    if (len != RL_PERMIT_ID_LEN) id = "?"; /* not an id: the core refuses it in its words */
    snprintf(c->id, sizeof c->id, "%s", id);
    return 0;
}

PyObject *rlpy_start_family(rlpy_completions *self, PyObject *args) {
    PyObject *obj, *done, *arg = Py_None, *lease = Py_None;
    const char *name;
    if (!PyArg_ParseTuple(args, "OsO|OO:family", &obj, &name, &done, &arg, &lease)) return NULL;
    size_t op = 0;
    while (op < sizeof ops / sizeof *ops && strcmp(ops[op].name, name) != 0)
        op++;
    if (op == sizeof ops / sizeof *ops)
        return PyErr_Format(PyExc_ValueError, "unknown family call %s", name);
    rl_client *client;
    void *target = target_of(obj, ops[op].on, &client);
    if (!target) return NULL;
    long long count = 0;
    int64_t lease_ms = 0;
    if (ops[op].arg == ARG_COUNT && (count = PyLong_AsLongLong(arg)) == -1 && PyErr_Occurred())
        return NULL;
    if (ops[op].arg == ARG_ID_LEASE && rlpy_positive_ms(lease, "lease", &lease_ms) < 0) return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_RUN, obj, done);
    if (!c) return NULL;
    c->target = target;
    c->op = (int)op;
    c->a = count;
    c->b = lease_ms;
    if ((ops[op].arg == ARG_ID || ops[op].arg == ARG_ID_LEASE) && take_id(c, arg) < 0) {
        Py_DECREF(c);
        Py_DECREF(c);
        return NULL;
    }
    rl_error err;
    rl_status st = rl_client_run_async(client, run, c, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_semaphore_acquire(rlpy_completions *self, PyObject *args) {
    PyObject *sem, *timeout, *done;
    long long permits;
    if (!PyArg_ParseTuple(args, "OLOO:semaphore_acquire", &sem, &permits, &timeout, &done))
        return NULL;
    rl_semaphore *core = rlpy_semaphore_core(sem, NULL);
    int64_t wait_ms;
    if (!core || rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0) return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_WAIT, sem, done);
    if (!c) return NULL;
    rl_error err;
    rl_status st =
        rl_semaphore_acquire_async(core, permits, wait_ms, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_permit_acquire(rlpy_completions *self, PyObject *args) {
    PyObject *sem, *lease, *timeout, *done;
    if (!PyArg_ParseTuple(args, "OOOO:permit_acquire", &sem, &lease, &timeout, &done)) return NULL;
    rl_expirable *core = rlpy_expirable_core(sem, NULL);
    int64_t lease_ms, wait_ms;
    if (!core || rlpy_lease_ms(lease, &lease_ms) < 0 ||
        rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0)
        return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_PERMIT, sem, done);
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_expirable_acquire_async(core, lease_ms, wait_ms, c->id, rlpy_call_ended, c,
                                              &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_latch_wait(rlpy_completions *self, PyObject *args) {
    PyObject *latch, *timeout, *done;
    if (!PyArg_ParseTuple(args, "OOO:latch_wait", &latch, &timeout, &done)) return NULL;
    rl_countdown *core = rlpy_countdown_core(latch, NULL);
    int64_t wait_ms;
    if (!core || rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0) return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_WAIT, latch, done);
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_countdown_wait_async(core, wait_ms, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_multilock_acquire(rlpy_completions *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"multi", "context", "timeout", "lease", "done", "max_hold", NULL};
    PyObject *multi, *timeout, *lease, *done, *max_hold = NULL;
    unsigned long long context;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OKOOO|$O:multilock_acquire", keywords, &multi,
                                     &context, &timeout, &lease, &done, &max_hold))
        return NULL;
    rl_multilock *core = rlpy_multilock_core(multi);
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    if (!core || rlpy_timeout_ms(timeout, "timeout", &o.wait_ms) < 0 ||
        rlpy_lease_ms(lease, &o.lease_ms) < 0 ||
        (max_hold && rlpy_max_hold_ms(max_hold, &o.max_hold_ms) < 0))
        return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_ACQUIRE, multi, done);
    if (!c) return NULL;
    rl_error err;
    rl_status st =
        rl_multilock_acquire_async(core, context, &o, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_multilock_release(rlpy_completions *self, PyObject *args) {
    PyObject *multi, *done;
    unsigned long long context;
    if (!PyArg_ParseTuple(args, "OKO:multilock_release", &multi, &context, &done)) return NULL;
    rl_multilock *core = rlpy_multilock_core(multi);
    rlpy_call *c = core ? rlpy_new_call(self, CALL_RELEASE, multi, done) : NULL;
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_multilock_release_async(core, context, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}
