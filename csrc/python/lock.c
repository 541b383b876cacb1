/* redlease.Lock: a handle on one lock name of any Redisson kind (the Python subclasses in
 * python/redlease/_locks.py name the kinds). The owner of a hold is (client, OS thread);
 * holds live in the client, so two Lock objects of one client on one name share them. */
#include "binding.h" /* first: Python.h before any system header */

#include <math.h>
#include <string.h>

typedef struct {
    PyObject_HEAD rl_lock *lock;
    PyObject *client;             /* the redlease._core.Client, kept alive while the lock is */
    PyObject *name;               /* as given: str or bytes */
    int64_t timeout_ms, lease_ms; /* defaults for `with` and for acquire() without them */
    int64_t max_hold_ms;          /* likewise: 0 = the client's, RL_MAX_HOLD_NONE, or a cap */
    PyObject *weakrefs;
} rlpy_lock;

/* ---- construction ------------------------------------------------------------------------- */

static int lock_init(rlpy_lock *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"client", "name", "timeout", "lease", "max_hold", "_kind", NULL};
    PyObject *client, *name, *timeout = NULL, *lease = Py_None, *max_hold = NULL;
    int kind = RL_LOCK_REENTRANT;
    if (self->lock) {
        PyErr_SetString(PyExc_RuntimeError, "Lock.__init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|$OOOi:Lock", keywords, &rlpy_client_type,
                                     &client, &name, &timeout, &lease, &max_hold, &kind))
        return -1;
    const char *bytes;
    Py_ssize_t len;
    if (PyUnicode_Check(name)) {
        bytes = PyUnicode_AsUTF8AndSize(name, &len);
        if (!bytes) return -1;
    } else if (PyBytes_Check(name)) {
        bytes = PyBytes_AS_STRING(name);
        len = PyBytes_GET_SIZE(name);
    } else {
        PyErr_Format(PyExc_TypeError, "a lock name must be str or bytes, not %.100s",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    int64_t timeout_ms = RL_WAIT_FOREVER, lease_ms, max_hold_ms = 0;
    if ((timeout && rlpy_timeout_ms(timeout, "timeout", &timeout_ms) < 0) ||
        rlpy_lease_ms(lease, &lease_ms) < 0 ||
        (max_hold && rlpy_max_hold_ms(max_hold, &max_hold_ms) < 0))
        return -1;
    rl_client *core = ((rlpy_client *)client)->client;
    if (!core) {
        PyErr_SetString(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
        return -1;
    }
    rl_error err;
    if (rl_lock_new_kind(core, (rl_lock_kind)kind, bytes, (size_t)len, &self->lock, &err) !=
        RL_OK) {
        rlpy_raise(&err);
        return -1;
    }
    self->client = Py_NewRef(client);
    self->name = Py_NewRef(name);
    self->timeout_ms = timeout_ms;
    self->lease_ms = lease_ms;
    self->max_hold_ms = max_hold_ms;
    return 0;
}

static void lock_dealloc(rlpy_lock *self) {
    if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
    rl_lock_free(self->lock); /* local only; a hold it took stays with the client */
    Py_XDECREF(self->name);
    Py_XDECREF(self->client);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(rlpy_lock *self) {
    if (self->lock) return 1;
    PyErr_SetString(PyExc_RuntimeError, "Lock.__init__ was not called");
    return 0;
}

/* For the local queries, which the core answers 0 on a closed client: say it is closed. */
static int open_client(rlpy_lock *self) {
    if (!ready(self)) return 0;
    if (((rlpy_client *)self->client)->client) return 1;
    PyErr_SetString(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    return 0;
}

/* ---- acquire / release -------------------------------------------------------------------- */

/* 1 acquired, 0 not acquired (another owner, or the failover grace: why in *err), -1 exception
 * set. */
static int acquire(rlpy_lock *self, int64_t lease_ms, int64_t wait_ms, int64_t max_hold_ms,
                   rl_error *err) {
    if (rlpy_refuse_on_event_loop("Lock.acquire()", "Client.lock()") < 0) return -1;
    uint64_t context = rlpy_owner_context();
    err->grace_left_ms = 0;
    if (wait_ms != 0 && rlpy_green_active())
        return rlpy_green_acquire((PyObject *)self, context, lease_ms, wait_ms, max_hold_ms);
    rlpy_wait w;
    if (rlpy_wait_start(&w, wait_ms) < 0) return -1;
    rl_acquire_options options = {.lease_ms = lease_ms,
                                  .wait_ms = wait_ms,
                                  .max_hold_ms = max_hold_ms,
                                  .hook = w.hook,
                                  .hook_userdata = &w};
    rl_status st;
    RLPY_WAITING(&w, st = rl_lock_acquire_with(self->lock, context, &options, err));
    if (st == RL_OK) return 1;
    if (st == RL_NOT_ACQUIRED) return 0;
    rlpy_raise(err);
    return -1;
}

static PyObject *lock_acquire(rlpy_lock *self, PyObject *args, PyObject *kwargs) {
    int64_t wait_ms = self->timeout_ms, lease_ms = self->lease_ms, max_hold_ms = self->max_hold_ms;
    if (!ready(self) || rlpy_acquire_args(args, kwargs, &wait_ms, &lease_ms, &max_hold_ms) < 0)
        return NULL;
    rl_error err;
    int got = acquire(self, lease_ms, wait_ms, max_hold_ms, &err);
    return got < 0 ? NULL : PyBool_FromLong(got);
}

static int release(rlpy_lock *self) {
    if (rlpy_refuse_on_event_loop("Lock.release()", "Client.lock()") < 0) return -1;
    rl_error err;
    rl_status st;
    uint64_t context = rlpy_owner_context();
    RLPY_UNLOCKED(st = rl_lock_release(self->lock, context, &err));
    if (st == RL_OK) return 0;
    rlpy_raise(&err);
    return -1;
}

static PyObject *lock_release(rlpy_lock *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"token", NULL};
    PyObject *token = Py_None;
    if (!ready(self) || !PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:release", keywords, &token))
        return NULL;
    if (token != Py_None) return rlpy_lock_release_token((PyObject *)self, token);
    if (release(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *lock_owner(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return rlpy_lock_owners((PyObject *)self, ((rlpy_client *)self->client)->client, self->name);
}

static PyObject *lock_enter(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    rl_error err;
    int got = acquire(self, self->lease_ms, self->timeout_ms, self->max_hold_ms, &err);
    if (got < 0) return NULL;
    if (!got && err.grace_left_ms > 0) { /* not another owner: the core says why */
        PyErr_SetString(rlpy_error_class(RL_NOT_ACQUIRED), err.message);
        return NULL;
    }
    if (!got) {
        PyErr_Format(rlpy_error_class(RL_NOT_ACQUIRED),
                     "lock %R is held by another owner; not acquired within %lld.%03lld s",
                     self->name, (long long)(self->timeout_ms / 1000),
                     (long long)(self->timeout_ms % 1000));
        return NULL;
    }
    return Py_NewRef(self);
}

/* A release error at the end of a `with` is raised; when the body raised too, Python chains the
 * body's exception as its __context__, so neither is hidden. */
static PyObject *lock_exit(rlpy_lock *self, PyObject *args) {
    (void)args;
    if (!ready(self) || release(self) < 0) return NULL;
    Py_RETURN_FALSE;
}

/* ---- queries ------------------------------------------------------------------------------ */

/* One server-side query (one round trip) with the GIL released; -1 with the exception set. */
static int query(rlpy_lock *self, rl_query what, int64_t *out) {
    if (!ready(self)) return -1;
    uint64_t context = rlpy_owner_context();
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_lock_query(self->lock, what, context, out, &err));
    if (st == RL_OK) return 0;
    rlpy_raise(&err);
    return -1;
}

static PyObject *lock_locked(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    int64_t locked;
    return query(self, RL_QUERY_LOCKED, &locked) < 0 ? NULL : PyBool_FromLong(locked != 0);
}

static PyObject *lock_held(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    int64_t held;
    return query(self, RL_QUERY_HELD, &held) < 0 ? NULL : PyBool_FromLong(held != 0);
}

static PyObject *lock_remaining(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    int64_t pttl;
    if (query(self, RL_QUERY_REMAINING, &pttl) < 0) return NULL;
    if (pttl == -2) Py_RETURN_NONE;
    return PyFloat_FromDouble(pttl == -1 ? INFINITY : (double)pttl / 1000.0);
}

static PyObject *lock_force_unlock(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    int deleted = 0;
    rl_error err;
    rl_status st;
    if (!ready(self)) return NULL;
    RLPY_UNLOCKED(st = rl_lock_force_unlock(self->lock, &deleted, &err));
    return st == RL_OK ? PyBool_FromLong(deleted) : rlpy_raise(&err);
}

static PyObject *lock_get_hold_count(rlpy_lock *self, void *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return PyLong_FromLongLong(rl_lock_local_holds(self->lock, rlpy_owner_context()));
}

static PyObject *lock_get_lost(rlpy_lock *self, void *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return PyBool_FromLong(rl_lock_lost(self->lock, rlpy_owner_context(), NULL));
}

static PyObject *lock_get_lost_reason(rlpy_lock *self, void *unused) {
    (void)unused;
    rl_lost_reason reason;
    if (!open_client(self)) return NULL;
    if (!rl_lock_lost(self->lock, rlpy_owner_context(), &reason)) Py_RETURN_NONE;
    return PyUnicode_FromString(rl_lost_reason_name(reason));
}

/* Validity (rl_lock_state) of one context's hold: the calling thread's for the public methods,
 * a task's for redlease.asyncio (_validity, _check). Times are CLOCK_MONOTONIC, in seconds as
 * time.monotonic(); 0.0 when nothing is guaranteed. */
static double seconds(int64_t ms) {
    return (double)ms / 1000.0;
}

static PyObject *valid_for(rlpy_lock *self, uint64_t context) {
    if (!open_client(self)) return NULL;
    int64_t until = rl_lock_valid_until(self->lock, context);
    int64_t left = until ? until - rl_monotonic_ms() : 0;
    return PyFloat_FromDouble(left > 0 ? seconds(left) : 0.0);
}

static PyObject *check(rlpy_lock *self, uint64_t context, double min_left) {
    if (!(min_left >= 0.0 && min_left < 1e9)) {
        PyErr_SetString(PyExc_ValueError, "min_left must be a number of seconds >= 0");
        return NULL;
    }
    if (!open_client(self)) return NULL;
    int64_t left;
    rl_error err;
    if (rl_lock_check(self->lock, context, (int64_t)(min_left * 1000.0 + 0.999), &left, &err) !=
        RL_OK)
        return rlpy_raise(&err);
    return PyFloat_FromDouble(seconds(left));
}

static PyObject *lock_valid_for(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    return valid_for(self, rlpy_owner_context());
}

static PyObject *lock_check(rlpy_lock *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"min_left", NULL};
    double min_left = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|d:check", keywords, &min_left)) return NULL;
    return check(self, rlpy_owner_context(), min_left);
}

static PyObject *lock_get_deadline(rlpy_lock *self, void *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return PyFloat_FromDouble(seconds(rl_lock_valid_until(self->lock, rlpy_owner_context())));
}

static PyObject *lock_get_in_doubt(rlpy_lock *self, void *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return PyBool_FromLong(rl_lock_state(self->lock, rlpy_owner_context(), NULL) ==
                           RL_HOLD_IN_DOUBT);
}

/* _validity(context) -> (state, deadline); _check(context, min_left) -> float. */
static PyObject *lock_validity_of(rlpy_lock *self, PyObject *arg) {
    unsigned long long context = PyLong_AsUnsignedLongLong(arg);
    if (context == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (!open_client(self)) return NULL;
    int64_t until;
    rl_hold_state state = rl_lock_state(self->lock, context, &until);
    return Py_BuildValue("(id)", (int)state, seconds(until));
}

static PyObject *lock_check_of(rlpy_lock *self, PyObject *args) {
    unsigned long long context;
    double min_left;
    if (!PyArg_ParseTuple(args, "Kd:_check", &context, &min_left)) return NULL;
    return check(self, context, min_left);
}

static PyObject *lock_get_name(rlpy_lock *self, void *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    return Py_NewRef(self->name);
}

/* The fencing token of the calling thread's hold (0: none); FencedLock.token reads it. */
static PyObject *lock_token(rlpy_lock *self, PyObject *unused) {
    (void)unused;
    if (!open_client(self)) return NULL;
    return PyLong_FromLongLong(rl_lock_token(self->lock, rlpy_owner_context()));
}

static PyObject *lock_repr(rlpy_lock *self) {
    const char *type = Py_TYPE(self)->tp_name, *module = strchr(type, '.') ? "" : "redlease.";
    if (!self->lock) return PyUnicode_FromFormat("<%s%s (uninitialised)>", module, type);
    return PyUnicode_FromFormat("<%s%s %R hold_count=%lld>", module, type, self->name,
                                (long long)rl_lock_local_holds(self->lock, rlpy_owner_context()));
}

/* ---- type --------------------------------------------------------------------------------- */

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1, lease=None, *, max_hold=...) -> bool\n--\n\n"
     "Takes one hold for the calling thread (reentrant). timeout: seconds to wait, -1 forever, "
     "0 one try; blocking=False is one try. lease: None keeps the lock with the watchdog until "
     "release(); a number of seconds is a fixed lease, not renewed. max_hold: seconds after "
     "which the watchdog stops renewing this hold and reports it lost (None: no cap; left out: "
     "the client's max_hold). Arguments left out take the "
     "values given to Client.lock(). Returns False when another owner kept it. Raises "
     "LockLostError when this thread's earlier hold was lost and not yet released."},
    {"release", (PyCFunction)(void (*)(void))lock_release, METH_VARARGS | METH_KEYWORDS,
     "release(*, token=None) -> None\n--\n\nReleases one hold of the calling thread; with a "
     "token from hand_off(), every hold of the token's owner (any thread, any process). Raises "
     "NotOwnedError when it holds none (a token: when its owner holds none), LockLostError when "
     "its hold was lost while held (the hold is dropped "
     "all the same), ConnectionError when Redis could not be reached (renewal stops at once; "
     "calling release() again retries the same release)."},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS,
     "Acquires with the timeout and lease given to Client.lock(); LockTimeout if not acquired."},
    {"__exit__", (PyCFunction)lock_exit, METH_VARARGS,
     "Releases; a failed release (e.g. LockLostError) is raised, chained to the body's error."},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS,
     "locked() -> bool\n--\n\nWhether anyone holds the lock (one round trip)."},
    {"held", (PyCFunction)lock_held, METH_NOARGS,
     "held() -> bool\n--\n\nWhether the calling thread holds the lock, as Redis sees it (one "
     "round trip)."},
    {"remaining", (PyCFunction)lock_remaining, METH_NOARGS,
     "remaining() -> float | None\n--\n\nSeconds of lease left, None when not locked (one round "
     "trip)."},
    {"_token", (PyCFunction)lock_token, METH_NOARGS,
     "_token() -> int\n--\n\nThe fencing token of the calling thread's hold; 0 when none."},
    {"extend", (PyCFunction)(void (*)(void))rlpy_lock_extend, METH_VARARGS | METH_KEYWORDS,
     "extend(additional_time, replace_ttl=False) -> True\n--\n\nA fixed-lease hold of the "
     "calling thread: adds seconds to the lease left (replace_ttl: sets it to that). ValueError "
     "in watchdog mode, NotOwnedError when not held, LockLostError when Redis no longer has it."},
    {"reacquire", (PyCFunction)rlpy_lock_reacquire, METH_NOARGS,
     "reacquire() -> True\n--\n\nA fixed-lease hold of the calling thread: its lease again "
     "from now. Refusals as extend()."},
    {"hand_off", (PyCFunction)rlpy_lock_hand_off, METH_NOARGS,
     "hand_off() -> str\n--\n\nTurns the calling thread's hold into a token and lets go of it "
     "here (no more renewal); another thread or process releases it with release(token=...)."},
    {"owner", (PyCFunction)lock_owner, METH_NOARGS,
     "owner() -> list[Owner]\n--\n\nWho holds the lock, from Redis: each owner's client_id, "
     "context, count, lease, write, local and its client's name (one inspection)."},
    {"valid_for", (PyCFunction)lock_valid_for, METH_NOARGS,
     "valid_for() -> float\n--\n\nSeconds for which the calling thread's hold is still "
     "guaranteed, on this host's clock (no round trip): from when its last confirmed acquire or "
     "renewal was sent, its lease less the drift margin. 0.0 when it holds nothing guaranteed."},
    {"check", (PyCFunction)(void (*)(void))lock_check, METH_VARARGS | METH_KEYWORDS,
     "check(min_left=0.0) -> float\n--\n\nA guard before a critical write (no round trip): "
     "returns valid_for() when the hold is held and guaranteed for at least min_left seconds. "
     "Raises LockInDoubtError when it is in doubt or less is left, LockLostError when it was "
     "lost or its lease ran out, NotOwnedError when the calling thread does not hold it."},
    {"_validity", (PyCFunction)lock_validity_of, METH_O,
     "_validity($self, context, /) -> (state, deadline)\n--\n\n"
     "redlease.asyncio's: a task's hold."},
    {"_check", (PyCFunction)lock_check_of, METH_VARARGS,
     "_check($self, context, min_left, /) -> float\n--\n\n"
     "redlease.asyncio's: check() of a task's hold."},
    {"force_unlock", (PyCFunction)lock_force_unlock, METH_NOARGS,
     "force_unlock() -> bool\n--\n\nDeletes the lock whoever holds it and wakes a waiter; True "
     "if it was held. The holder finds its hold lost."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef lock_getset[] = {
    {"hold_count", (getter)lock_get_hold_count, NULL,
     "The calling thread's holds of this lock as this client knows them (no round trip).", NULL},
    {"lost", (getter)lock_get_lost, NULL,
     "True when the calling thread's hold was lost while held (until it is released).", NULL},
    {"lost_reason", (getter)lock_get_lost_reason, NULL,
     "Why the calling thread's hold was lost ('expired', 'deleted', 'owner_changed', "
     "'unreachable', 'max_hold', 'failover'), or None.",
     NULL},
    {"in_doubt", (getter)lock_get_in_doubt, NULL,
     "True while the calling thread's hold is in doubt: a renewal failed or is late, or less "
     "than the drift margin of its lease is left. It may still be valid (valid_for()); it is "
     "held again when a renewal is confirmed, or lost.",
     NULL},
    {"deadline", (getter)lock_get_deadline, NULL,
     "The time.monotonic() time until which the calling thread's hold is guaranteed (usable "
     "with asyncio.timeout_at); 0.0, a time long past, when nothing is guaranteed.",
     NULL},
    {"name", (getter)lock_get_name, NULL, "The lock's name, as given (str or bytes).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_lock_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease.Lock",
    .tp_doc = "A Redisson-compatible reentrant lock; made by Client.lock(name, *, timeout=-1, "
              "lease=None).\n\nThe owner of a hold is (client, OS thread). Use it in a `with` "
              "block, or call acquire() and release().",
    .tp_basicsize = sizeof(rlpy_lock),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* the kinds subclass it */
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lock_init,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_repr = (reprfunc)lock_repr,
    .tp_methods = lock_methods,
    .tp_getset = lock_getset,
    .tp_weaklistoffset = offsetof(rlpy_lock, weakrefs),
};

rl_lock *rlpy_lock_core(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, &rlpy_lock_type) || !((rlpy_lock *)obj)->lock) {
        PyErr_Format(PyExc_TypeError, "a redlease lock was expected, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rlpy_lock *)obj)->lock;
}
