/* redlease.MultiLock: several redlease locks (any kinds, any clients) taken as one by the
 * calling thread, with RedissonMultiLock's rules; redlock=True makes it a RedLock (a majority
 * of locks on independent servers). The core's rl_multilock. */
#include "binding.h"

typedef struct {
    PyObject_HEAD rl_multilock *multi;
    PyObject *locks; /* tuple of the redlease.Lock objects: they outlive the core multi-lock */
    int redlock;
    int64_t timeout_ms, lease_ms, max_hold_ms; /* for `with` and acquire() without them */
} rlpy_multilock;

static int multilock_init(rlpy_multilock *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"locks", "redlock", "timeout", "lease", "max_hold", NULL};
    PyObject *locks, *timeout = NULL, *lease = Py_None, *max_hold = NULL;
    int redlock = 0;
    if (self->multi) {
        PyErr_SetString(PyExc_RuntimeError, "MultiLock.__init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$pOOO:MultiLock", keywords, &locks, &redlock,
                                     &timeout, &lease, &max_hold))
        return -1;
    int64_t timeout_ms = RL_WAIT_FOREVER, lease_ms, max_hold_ms = 0;
    if ((timeout && rlpy_timeout_ms(timeout, "timeout", &timeout_ms) < 0) ||
        rlpy_lease_ms(lease, &lease_ms) < 0 ||
        (max_hold && rlpy_max_hold_ms(max_hold, &max_hold_ms) < 0))
        return -1;
    PyObject *tuple = PySequence_Tuple(locks);
    if (!tuple) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    rl_lock **core = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *core);
    if (!core) {
        Py_DECREF(tuple);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(core[i] = rlpy_lock_core(PyTuple_GET_ITEM(tuple, i)))) {
            PyMem_Free(core);
            Py_DECREF(tuple);
            return -1;
        }
    }
    rl_error err;
    rl_status st = redlock ? rl_redlock_new(core, (size_t)n, &self->multi, &err)
                           : rl_multilock_new(core, (size_t)n, &self->multi, &err);
    PyMem_Free(core);
    if (st != RL_OK) {
        Py_DECREF(tuple);
        rlpy_raise(&err);
        return -1;
    }
    self->locks = tuple;
    self->redlock = redlock;
    self->timeout_ms = timeout_ms;
    self->lease_ms = lease_ms;
    self->max_hold_ms = max_hold_ms;
    return 0;
}

static void multilock_dealloc(rlpy_multilock *self) {
    rl_multilock_free(self->multi); /* holds taken stay with their locks' clients */
    Py_XDECREF(self->locks);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(rlpy_multilock *self) {
    if (self->multi) return 1;
    PyErr_SetString(PyExc_RuntimeError, "MultiLock.__init__ was not called");
    return 0;
}

/* 1 acquired, 0 not, -1 exception set. */
static int acquire(rlpy_multilock *self, int64_t lease_ms, int64_t wait_ms, int64_t max_hold_ms) {
    if (rlpy_refuse_on_event_loop("MultiLock.acquire()", "Client.multi_lock()") < 0 ||
        rlpy_refuse_green_wait("MultiLock.acquire()", wait_ms) < 0)
        return -1;
    rlpy_wait w;
    if (rlpy_wait_start(&w, wait_ms) < 0) return -1;
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    o.max_hold_ms = max_hold_ms;
    o.hook = w.hook;
    o.hook_userdata = &w;
    uint64_t context = rlpy_owner_context();
    rl_error err;
    rl_status st;
    RLPY_WAITING(&w, st = rl_multilock_acquire(self->multi, context, &o, &err));
    if (st == RL_OK) return 1;
    if (st == RL_NOT_ACQUIRED) return 0;
    rlpy_raise(&err);
    return -1;
}

static PyObject *multilock_acquire(rlpy_multilock *self, PyObject *args, PyObject *kwargs) {
    int64_t wait_ms = self->timeout_ms, lease_ms = self->lease_ms, max_hold_ms = self->max_hold_ms;
    if (!ready(self) || rlpy_acquire_args(args, kwargs, &wait_ms, &lease_ms, &max_hold_ms) < 0)
        return NULL;
    int got = acquire(self, lease_ms, wait_ms, max_hold_ms);
    return got < 0 ? NULL : PyBool_FromLong(got);
}

static PyObject *multilock_release(rlpy_multilock *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    uint64_t context = rlpy_owner_context();
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_multilock_release(self->multi, context, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *multilock_enter(rlpy_multilock *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int got = acquire(self, self->lease_ms, self->timeout_ms, self->max_hold_ms);
    if (got < 0) return NULL;
    if (!got)
        return PyErr_Format(
            rlpy_error_class(RL_NOT_ACQUIRED), "%s of %zd locks not acquired within %lld.%03lld s",
            self->redlock ? "RedLock" : "multi-lock", PyTuple_GET_SIZE(self->locks),
            (long long)(self->timeout_ms / 1000), (long long)(self->timeout_ms % 1000));
    return Py_NewRef(self);
}

static PyObject *multilock_exit(rlpy_multilock *self, PyObject *args) {
    (void)args;
    PyObject *released = multilock_release(self, NULL);
    if (!released) return NULL;
    Py_DECREF(released);
    Py_RETURN_FALSE;
}

static PyObject *multilock_held_by(rlpy_multilock *self, PyObject *arg) {
    unsigned long long context = ready(self) ? PyLong_AsUnsignedLongLong(arg) : 0;
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(rl_multilock_held(self->multi, context));
}

static PyObject *multilock_get_held(rlpy_multilock *self, void *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    return PyLong_FromSize_t(rl_multilock_held(self->multi, rlpy_owner_context()));
}

static PyObject *multilock_get_locks(rlpy_multilock *self, void *unused) {
    (void)unused;
    return ready(self) ? Py_NewRef(self->locks) : NULL;
}

static PyObject *multilock_get_redlock(rlpy_multilock *self, void *unused) {
    (void)unused;
    return ready(self) ? PyBool_FromLong(self->redlock) : NULL;
}

static PyObject *multilock_repr(rlpy_multilock *self) {
    if (!self->multi) return PyUnicode_FromString("<redlease.MultiLock (uninitialised)>");
    return PyUnicode_FromFormat("<redlease.%s of %zd locks>",
                                self->redlock ? "RedLock" : "MultiLock",
                                PyTuple_GET_SIZE(self->locks));
}

static PyMethodDef multilock_methods[] = {
    {"_held_by", (PyCFunction)multilock_held_by, METH_O,
     "_held_by(context) -> int\n--\n\nHow many of its locks an owner context holds (local)."},
    {"acquire", (PyCFunction)(void (*)(void))multilock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1, lease=None, *, max_hold=...) -> bool\n--\n\nTakes "
     "every lock (a RedLock: a majority) for the calling thread, all or none, within one "
     "timeout. lease: None for the watchdog, else seconds, set on each lock once all are taken. "
     "Arguments left out take the values given when it was made."},
    {"release", (PyCFunction)multilock_release, METH_NOARGS,
     "release() -> None\n--\n\nReleases every lock of it the calling thread holds; the first "
     "failure is raised once all were tried. NotOwnedError when it holds none."},
    {"__enter__", (PyCFunction)multilock_enter, METH_NOARGS,
     "Acquires with the options given when it was made; LockTimeout if not acquired."},
    {"__exit__", (PyCFunction)multilock_exit, METH_VARARGS, "Releases every lock."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef multilock_getset[] = {
    {"held", (getter)multilock_get_held, NULL,
     "How many of its locks the calling thread holds (no round trip).", NULL},
    {"locks", (getter)multilock_get_locks, NULL, "The locks, as given.", NULL},
    {"redlock", (getter)multilock_get_redlock, NULL, "True for a RedLock.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_multilock_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease.MultiLock",
    .tp_doc = "Locks taken as one (RedissonMultiLock); made by Client.multi_lock(*locks) or "
              "redlease.red_lock(*locks).",
    .tp_basicsize = sizeof(rlpy_multilock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)multilock_init,
    .tp_dealloc = (destructor)multilock_dealloc,
    .tp_repr = (reprfunc)multilock_repr,
    .tp_methods = multilock_methods,
    .tp_getset = multilock_getset,
};

rl_multilock *rlpy_multilock_core(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, &rlpy_multilock_type) || !((rlpy_multilock *)obj)->multi) {
        PyErr_Format(PyExc_TypeError, "a redlease multi-lock was expected, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((rlpy_multilock *)obj)->multi;
}
