/* redlease.Semaphore: Redisson's RSemaphore (the core's rl_semaphore). Permits belong to the
 * client (any of its threads may give them back); `with sem:` takes and gives back one. */
#include "binding.h"

typedef struct {
    PyObject_HEAD rl_semaphore *sem;
    rlpy_named named;
    int64_t timeout_ms; /* for `with` and acquire() without a timeout */
} rlpy_semaphore;

static int semaphore_init(rlpy_semaphore *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"client", "name", "timeout", NULL};
    PyObject *client, *name, *timeout = NULL;
    rl_client *core;
    const char *bytes;
    size_t len;
    rl_error err;
    int64_t timeout_ms = RL_WAIT_FOREVER;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|$O:Semaphore", keywords, &rlpy_client_type,
                                     &client, &name, &timeout) ||
        (timeout && rlpy_timeout_ms(timeout, "timeout", &timeout_ms) < 0) ||
        rlpy_named_open("Semaphore", self->sem != NULL, client, name, &core, &bytes, &len) < 0)
        return -1;
    if (rlpy_named_made(&self->named, client, name,
                        rl_semaphore_new(core, bytes, len, &self->sem, &err), &err) < 0)
        return -1;
    self->timeout_ms = timeout_ms;
    return 0;
}

static void semaphore_dealloc(rlpy_semaphore *self) {
    rl_semaphore_free(self->sem); /* permits taken stay this client's */
    rlpy_named_dealloc((PyObject *)self, &self->named);
}

static int ready(rlpy_semaphore *self) {
    return rlpy_named_ready(self->sem != NULL, "Semaphore");
}

/* 1 acquired, 0 not within the wait (why: in *err), -1 exception set. */
static int acquire(rlpy_semaphore *self, long long permits, int64_t wait_ms, rl_error *err) {
    if (rlpy_refuse_loop_wait("Semaphore.acquire()", wait_ms, "Client.semaphore()") < 0 ||
        rlpy_refuse_green_wait("Semaphore.acquire()", wait_ms) < 0)
        return -1;
    rlpy_wait w;
    if (rlpy_wait_start(&w, wait_ms) < 0) return -1;
    rl_status st;
    RLPY_WAITING(&w, st = rl_semaphore_acquire(self->sem, permits, wait_ms, w.hook, &w, err));
    if (st == RL_OK) return 1;
    if (st == RL_NOT_ACQUIRED) return 0;
    rlpy_raise(err);
    return -1;
}

static PyObject *semaphore_acquire(rlpy_semaphore *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"permits", "timeout", NULL};
    long long permits = 1;
    PyObject *timeout = NULL;
    if (!ready(self) ||
        !PyArg_ParseTupleAndKeywords(args, kwargs, "|LO:acquire", keywords, &permits, &timeout))
        return NULL;
    int64_t wait_ms = self->timeout_ms;
    if (timeout && rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0) return NULL;
    rl_error err;
    int got = acquire(self, permits, wait_ms, &err);
    return got < 0 ? NULL : PyBool_FromLong(got);
}

static PyObject *status_none(rl_status st, const rl_error *err) {
    if (st != RL_OK) return rlpy_raise(err);
    Py_RETURN_NONE;
}

static PyObject *semaphore_release(rlpy_semaphore *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"permits", NULL};
    long long permits = 1;
    if (!ready(self) ||
        !PyArg_ParseTupleAndKeywords(args, kwargs, "|L:release", keywords, &permits))
        return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_release(self->sem, permits, &err));
    return status_none(st, &err);
}

static PyObject *semaphore_try_set_permits(rlpy_semaphore *self, PyObject *arg) {
    long long permits = ready(self) ? PyLong_AsLongLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    int set = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_try_set_permits(self->sem, permits, &set, &err));
    return st == RL_OK ? PyBool_FromLong(set) : rlpy_raise(&err);
}

static PyObject *semaphore_add_permits(rlpy_semaphore *self, PyObject *arg) {
    long long delta = ready(self) ? PyLong_AsLongLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_add_permits(self->sem, delta, &err));
    return status_none(st, &err);
}

static PyObject *semaphore_available_permits(rlpy_semaphore *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int64_t n = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_available(self->sem, &n, &err));
    return st == RL_OK ? PyLong_FromLongLong(n) : rlpy_raise(&err);
}

static PyObject *semaphore_drain_permits(rlpy_semaphore *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int64_t n = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_drain(self->sem, &n, &err));
    return st == RL_OK ? PyLong_FromLongLong(n) : rlpy_raise(&err);
}

static PyObject *semaphore_enter(rlpy_semaphore *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    rl_error err;
    int got = acquire(self, 1, self->timeout_ms, &err);
    if (got < 0) return NULL;
    if (!got) return rlpy_raise(&err); /* LockTimeout, in the core's words */
    return Py_NewRef(self);
}

static PyObject *semaphore_exit(rlpy_semaphore *self, PyObject *args) {
    (void)args;
    if (!ready(self)) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_semaphore_release(self->sem, 1, &err));
    return st == RL_OK ? Py_NewRef(Py_False) : rlpy_raise(&err);
}

static PyObject *semaphore_get_held(rlpy_semaphore *self, void *unused) {
    (void)unused;
    if (!ready(self) || !rlpy_open_client(self->named.client)) return NULL;
    return PyLong_FromLongLong(rl_semaphore_held(self->sem));
}

static PyObject *semaphore_get_name(rlpy_semaphore *self, void *unused) {
    (void)unused;
    return ready(self) ? Py_NewRef(self->named.name) : NULL;
}

static PyObject *semaphore_repr(rlpy_semaphore *self) {
    if (!self->sem) return PyUnicode_FromString("<redlease.Semaphore (uninitialised)>");
    return PyUnicode_FromFormat("<redlease.Semaphore %R held=%lld>", self->named.name,
                                (long long)rl_semaphore_held(self->sem));
}

static PyMethodDef semaphore_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))semaphore_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(permits=1, timeout=...) -> bool\n--\n\nTakes `permits` at once, all or none. "
     "timeout: seconds to wait, -1 forever, 0 one try (left out: the semaphore's). False when "
     "they were not free in time."},
    {"release", (PyCFunction)(void (*)(void))semaphore_release, METH_VARARGS | METH_KEYWORDS,
     "release(permits=1) -> None\n--\n\nGives back permits this client took; NotOwnedError when "
     "it holds fewer (add_permits() gives permits it did not take)."},
    {"try_set_permits", (PyCFunction)semaphore_try_set_permits, METH_O,
     "try_set_permits(permits) -> bool\n--\n\nSets the number of permits when the semaphore "
     "does not exist yet; False when it exists (left alone)."},
    {"add_permits", (PyCFunction)semaphore_add_permits, METH_O,
     "add_permits(permits) -> None\n--\n\nAdds permits (negative: takes some away)."},
    {"available_permits", (PyCFunction)semaphore_available_permits, METH_NOARGS,
     "available_permits() -> int\n--\n\nThe permits free now (one round trip)."},
    {"drain_permits", (PyCFunction)semaphore_drain_permits, METH_NOARGS,
     "drain_permits() -> int\n--\n\nTakes every free permit; answers how many (they are this "
     "client's to release)."},
    {"__enter__", (PyCFunction)semaphore_enter, METH_NOARGS,
     "Takes one permit within the semaphore's timeout; LockTimeout if none came."},
    {"__exit__", (PyCFunction)semaphore_exit, METH_VARARGS, "Gives the permit back."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef semaphore_getset[] = {
    {"held", (getter)semaphore_get_held, NULL,
     "Permits of this semaphore the client holds (no round trip).", NULL},
    {"name", (getter)semaphore_get_name, NULL, "The semaphore's name, as given.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_semaphore_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease.Semaphore",
    .tp_doc = "A Redisson RSemaphore; made by Client.semaphore(name, *, timeout=-1).",
    .tp_basicsize = sizeof(rlpy_semaphore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)semaphore_init,
    .tp_dealloc = (destructor)semaphore_dealloc,
    .tp_repr = (reprfunc)semaphore_repr,
    .tp_methods = semaphore_methods,
    .tp_getset = semaphore_getset,
};

rl_semaphore *rlpy_semaphore_core(PyObject *obj, rl_client **client) {
    if (!PyObject_TypeCheck(obj, &rlpy_semaphore_type) || !((rlpy_semaphore *)obj)->sem) {
        PyErr_Format(PyExc_TypeError, "a redlease semaphore was expected, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (client && !(*client = rlpy_open_client(((rlpy_semaphore *)obj)->named.client))) return NULL;
    return ((rlpy_semaphore *)obj)->sem;
}
