/* redlease._core.Call: one async core call started from Python (Completions.acquire, ...), and
 * the refusal of the blocking API on an event loop's thread. */
#include "async.h"

static void call_dealloc(rlpy_call *self) {
    rl_call_free(self->call); /* it has ended: its done was run (it held this object) */
    Py_XDECREF(self->lock);
    Py_XDECREF(self->done);
    Py_XDECREF(self->completions);
    PyObject_Free(self);
}

static PyObject *call_cancel(rlpy_call *self, PyObject *unused) {
    (void)unused;
    rl_call_cancel(self->call);
    Py_RETURN_NONE;
}

static PyMethodDef call_methods[] = {
    {"cancel", (PyCFunction)call_cancel, METH_NOARGS,
     "cancel() -> None\n--\n\nAn acquire stops waiting (a hold granted in flight is released); "
     "done is still called, with None. Other calls run to their end."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rlpy_call_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease._core.Call",
    .tp_doc = "An async call in progress (see Completions).",
    .tp_basicsize = sizeof(rlpy_call),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)call_dealloc,
    .tp_methods = call_methods,
};

/* A Call for `lock`; its second reference is the core's, dropped by Completions.run. */
rlpy_call *rlpy_new_call(rlpy_completions *q, rlpy_call_kind kind, PyObject *lock, PyObject *done) {
    if (!PyCallable_Check(done)) {
        PyErr_SetString(PyExc_TypeError, "done must be callable");
        return NULL;
    }
    rlpy_call *c = PyObject_New(rlpy_call, &rlpy_call_type);
    if (!c) return NULL;
    c->call = NULL;
    c->kind = kind;
    c->lock = Py_NewRef(lock);
    c->done = Py_NewRef(done);
    c->completions = (rlpy_completions *)Py_NewRef(q);
    c->status = RL_OK;
    c->value = 0;
    c->next = NULL;
    c->target = NULL;
    c->op = 0;
    c->a = c->b = 0;
    c->id[0] = '\0';
    Py_INCREF(c);
    return c;
}

/* The call started (the core will queue it) or did not: then both references go. */
PyObject *rlpy_call_started(rlpy_call *c, rl_status st, const rl_error *err) {
    if (st == RL_OK) return (PyObject *)c;
    Py_DECREF(c);
    Py_DECREF(c);
    return rlpy_raise(err);
}

PyObject *rlpy_start_acquire(rlpy_completions *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"lock", "context", "timeout", "lease", "done", "max_hold", NULL};
    PyObject *lock, *timeout, *lease, *done, *max_hold = NULL;
    unsigned long long context;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OKOOO|$O:acquire", keywords, &lock, &context,
                                     &timeout, &lease, &done, &max_hold))
        return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    if (!core || rlpy_timeout_ms(timeout, "timeout", &o.wait_ms) < 0 ||
        rlpy_lease_ms(lease, &o.lease_ms) < 0 ||
        (max_hold && rlpy_max_hold_ms(max_hold, &o.max_hold_ms) < 0))
        return NULL;
    rlpy_call *c = rlpy_new_call(self, CALL_ACQUIRE, lock, done);
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_lock_acquire_async(core, context, &o, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_release(rlpy_completions *self, PyObject *args) {
    PyObject *lock, *done;
    unsigned long long context;
    if (!PyArg_ParseTuple(args, "OKO:release", &lock, &context, &done)) return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    rlpy_call *c = core ? rlpy_new_call(self, CALL_RELEASE, lock, done) : NULL;
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_lock_release_async(core, context, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_query(rlpy_completions *self, PyObject *args) {
    PyObject *lock, *done;
    int what;
    unsigned long long context;
    if (!PyArg_ParseTuple(args, "OiKO:query", &lock, &what, &context, &done)) return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    rlpy_call *c = core ? rlpy_new_call(self, CALL_QUERY, lock, done) : NULL;
    if (!c) return NULL;
    rl_error err;
    rl_status st =
        rl_lock_query_async(core, (rl_query)what, context, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_force_unlock(rlpy_completions *self, PyObject *args) {
    PyObject *lock, *done;
    if (!PyArg_ParseTuple(args, "OO:force_unlock", &lock, &done)) return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    rlpy_call *c = core ? rlpy_new_call(self, CALL_FORCE_UNLOCK, lock, done) : NULL;
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_lock_force_unlock_async(core, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_start_owner(rlpy_completions *self, PyObject *args) {
    PyObject *lock, *done;
    if (!PyArg_ParseTuple(args, "OO:owner", &lock, &done)) return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    rlpy_call *c = core ? rlpy_new_call(self, CALL_OWNER, lock, done) : NULL;
    if (!c) return NULL;
    rl_error err;
    rl_status st = rl_lock_inspect_async(core, rlpy_call_ended, c, &c->call, &err);
    return rlpy_call_started(c, st, &err);
}

PyObject *rlpy_local_state(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lock;
    unsigned long long context;
    if (!PyArg_ParseTuple(args, "OK:local_state", &lock, &context)) return NULL;
    rl_lock *core = rlpy_lock_core(lock);
    if (!core) return NULL;
    rl_lost_reason reason;
    int lost = rl_lock_lost(core, context, &reason);
    return Py_BuildValue("(LsL)", (long long)rl_lock_local_holds(core, context),
                         lost ? rl_lost_reason_name(reason) : NULL,
                         (long long)rl_lock_token(core, context));
}

int rlpy_async_add_types(PyObject *module) {
    if (PyType_Ready(&rlpy_completions_type) < 0 || PyType_Ready(&rlpy_call_type) < 0) return -1;
    return PyModule_AddObjectRef(module, "Completions", (PyObject *)&rlpy_completions_type) < 0 ||
                   PyModule_AddObjectRef(module, "Call", (PyObject *)&rlpy_call_type) < 0
               ? -1
               : 0;
}

/* ---- the blocking API on an event loop ---------------------------------------------------- */

int rlpy_refuse_green_wait(const char *what, int64_t wait_ms) {
    if (wait_ms == 0 || !rlpy_green_active()) return 0;
    PyErr_Format(PyExc_RuntimeError,
                 "%s with a wait would block every greenlet of the thread: under gevent, only "
                 "locks wait on the hub; try once (timeout=0) or use a lock",
                 what);
    return -1;
}

/* 1 when the calling thread runs an asyncio event loop, 0 when not, -1 with an exception set. */
static int loop_running(void) {
    static PyObject *module_name, *get_running_loop; /* asyncio's, once it was imported */
    if (!get_running_loop) {
        if (!module_name && !(module_name = PyUnicode_InternFromString("asyncio.events")))
            return -1;
        PyObject *events = PyImport_GetModule(module_name);
        if (!events) return PyErr_Occurred() ? -1 : 0; /* asyncio not imported: no loop runs */
        get_running_loop = PyObject_GetAttrString(events, "_get_running_loop");
        Py_DECREF(events);
        if (!get_running_loop) return -1;
    }
    PyObject *loop = PyObject_CallNoArgs(get_running_loop);
    if (!loop) return -1;
    int running = loop != Py_None;
    Py_DECREF(loop);
    return running;
}

int rlpy_refuse_on_event_loop(const char *what, const char *instead) {
    int running = loop_running();
    if (running <= 0) return running;
    PyErr_Format(PyExc_RuntimeError,
                 "%s would block the event loop, and its owner would be the thread that every "
                 "task of the loop shares: in coroutines use redlease.asyncio's %s",
                 what, instead);
    return -1;
}

int rlpy_refuse_loop_wait(const char *what, int64_t wait_ms, const char *instead) {
    int running = wait_ms == 0 ? 0 : loop_running();
    if (running <= 0) return running;
    PyErr_Format(PyExc_RuntimeError,
                 "%s with a wait would block the event loop, and every coroutine on it: in "
                 "coroutines use redlease.asyncio's %s (one try, timeout=0, does not wait)",
                 what, instead);
    return -1;
}
