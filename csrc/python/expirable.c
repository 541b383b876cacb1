/* redlease.PermitExpirableSemaphore: Redisson's RPermitExpirableSemaphore (the core's
 * rl_expirable). Each permit has an id and a lease; lease=None has the watchdog renew it. */
#include "binding.h"

typedef struct {
    PyObject_HEAD rl_expirable *sem;
    rlpy_named named;
} rlpy_expirable;

static int expirable_init(rlpy_expirable *self, PyObject *args, PyObject *kwargs) {
    PyObject *client, *name;
    rl_client *core;
    const char *bytes;
    size_t len;
    rl_error err;
    if (rlpy_named_parse(args, kwargs, "PermitExpirableSemaphore", self->sem != NULL, &client,
                         &name, &core, &bytes, &len) < 0)
        return -1;
    return rlpy_named_made(&self->named, client, name,
                           rl_expirable_new(core, bytes, len, &self->sem, &err), &err);
}

static void expirable_dealloc(rlpy_expirable *self) {
    rl_expirable_free(self->sem); /* renewed permits stay renewed until released */
    rlpy_named_dealloc((PyObject *)self, &self->named);
}

static int ready(rlpy_expirable *self) {
    return rlpy_named_ready(self->sem != NULL, "PermitExpirableSemaphore");
}

/* A permit id argument: str (hex); -1 with an exception set. */
static int permit_id(PyObject *arg, const char **id) {
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "a permit id is a str, not %.100s", Py_TYPE(arg)->tp_name);
        return -1;
    }
    *id = PyUnicode_AsUTF8(arg);
    return *id ? 0 : -1;
}

/* acquire() answers None when no permit came in time; permit() (`timed_out`) raises the core's
 * LockTimeout, whose words say why (none free, or no permits at all). */
static PyObject *acquire(rlpy_expirable *self, PyObject *args, PyObject *kwargs, int timed_out) {
    static char *keywords[] = {"lease", "timeout", NULL};
    PyObject *lease, *timeout = NULL;
    if (!ready(self) ||
        !PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:acquire", keywords, &lease, &timeout))
        return NULL;
    int64_t lease_ms, wait_ms = RL_WAIT_FOREVER;
    if (rlpy_lease_ms(lease, &lease_ms) < 0 ||
        (timeout && rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0))
        return NULL;
    if (rlpy_refuse_loop_wait("PermitExpirableSemaphore.acquire()", wait_ms,
                              "Client.permit_expirable_semaphore()") < 0 ||
        rlpy_refuse_green_wait("PermitExpirableSemaphore.acquire()", wait_ms) < 0)
        return NULL;
    char id[RL_PERMIT_ID_LEN + 1];
    rlpy_wait w;
    if (rlpy_wait_start(&w, wait_ms) < 0) return NULL;
    rl_error err;
    rl_status st;
    RLPY_WAITING(&w, st = rl_expirable_acquire(self->sem, lease_ms, wait_ms, w.hook, &w, id, &err));
    if (st == RL_OK) return PyUnicode_FromStringAndSize(id, RL_PERMIT_ID_LEN);
    if (st == RL_NOT_ACQUIRED && !timed_out) Py_RETURN_NONE;
    return rlpy_raise(&err);
}

static PyObject *expirable_acquire(rlpy_expirable *self, PyObject *args, PyObject *kwargs) {
    return acquire(self, args, kwargs, 0);
}

static PyObject *expirable_take(rlpy_expirable *self, PyObject *args, PyObject *kwargs) {
    return acquire(self, args, kwargs, 1);
}

static PyObject *expirable_release(rlpy_expirable *self, PyObject *arg) {
    const char *id;
    if (!ready(self) || permit_id(arg, &id) < 0) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_expirable_release(self->sem, id, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *expirable_update_lease_time(rlpy_expirable *self, PyObject *args) {
    PyObject *arg, *lease;
    const char *id;
    int64_t lease_ms;
    if (!ready(self) || !PyArg_ParseTuple(args, "OO:update_lease_time", &arg, &lease) ||
        permit_id(arg, &id) < 0 || rlpy_positive_ms(lease, "lease", &lease_ms) < 0)
        return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_expirable_update_lease(self->sem, id, lease_ms, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *expirable_try_set_permits(rlpy_expirable *self, PyObject *arg) {
    long long permits = ready(self) ? PyLong_AsLongLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    int set = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_expirable_try_set_permits(self->sem, permits, &set, &err));
    return st == RL_OK ? PyBool_FromLong(set) : rlpy_raise(&err);
}

static PyObject *expirable_add_permits(rlpy_expirable *self, PyObject *arg) {
    long long delta = ready(self) ? PyLong_AsLongLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_expirable_add_permits(self->sem, delta, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *expirable_available_permits(rlpy_expirable *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int64_t n = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_expirable_available(self->sem, &n, &err));
    return st == RL_OK ? PyLong_FromLongLong(n) : rlpy_raise(&err);
}

static PyObject *expirable_lost_reason(rlpy_expirable *self, PyObject *arg) {
    const char *id;
    if (!ready(self) || permit_id(arg, &id) < 0 || !rlpy_open_client(self->named.client))
        return NULL;
    rl_lost_reason reason;
    if (!rl_expirable_lost(self->sem, id, &reason)) Py_RETURN_NONE;
    return PyUnicode_FromString(rl_lost_reason_name(reason));
}

static PyObject *expirable_get_name(rlpy_expirable *self, void *unused) {
    (void)unused;
    return ready(self) ? Py_NewRef(self->named.name) : NULL;
}

static PyObject *expirable_repr(rlpy_expirable *self) {
    if (!self->sem)
        return PyUnicode_FromString("<redlease.PermitExpirableSemaphore (uninitialised)>");
    return PyUnicode_FromFormat("<redlease.PermitExpirableSemaphore %R>", self->named.name);
}

static PyMethodDef expirable_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))expirable_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(lease, timeout=-1) -> str | None\n--\n\nTakes one permit and answers its id. "
     "lease: seconds after which the permit comes back by itself unless released, or None to "
     "have the client's watchdog renew it until released (redlease's addition). timeout: "
     "seconds to wait, -1 forever, 0 one try; None when no permit came in time."},
    {"_take", (PyCFunction)(void (*)(void))expirable_take, METH_VARARGS | METH_KEYWORDS,
     "_take(lease, timeout=-1) -> str\n--\n\nAs acquire(), raising LockTimeout (saying why) "
     "when no permit came in time."},
    {"release", (PyCFunction)expirable_release, METH_O,
     "release(permit_id) -> None\n--\n\nGives the permit back. NotOwnedError when no such "
     "permit is held; LockLostError when it had expired (it is back in the pool)."},
    {"update_lease_time", (PyCFunction)expirable_update_lease_time, METH_VARARGS,
     "update_lease_time(permit_id, lease) -> None\n--\n\nThe permit's lease becomes `lease` "
     "seconds from now (a renewed permit stops being renewed); NotOwnedError when not held."},
    {"try_set_permits", (PyCFunction)expirable_try_set_permits, METH_O,
     "try_set_permits(permits) -> bool\n--\n\nSets the number of permits when the semaphore "
     "does not exist yet."},
    {"add_permits", (PyCFunction)expirable_add_permits, METH_O,
     "add_permits(permits) -> None\n--\n\nAdds permits (negative: takes some away)."},
    {"available_permits", (PyCFunction)expirable_available_permits, METH_NOARGS,
     "available_permits() -> int\n--\n\nThe permits free now, expired ones counted back in."},
    {"lost_reason", (PyCFunction)expirable_lost_reason, METH_O,
     "lost_reason(permit_id) -> str | None\n--\n\nWhy a permit the watchdog renews was lost "
     "while held ('expired', 'deleted', ...), or None (no round trip)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef expirable_getset[] = {
    {"name", (getter)expirable_get_name, NULL, "The semaphore's name, as given.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_expirable_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease.PermitExpirableSemaphore",
    .tp_doc = "A Redisson RPermitExpirableSemaphore; made by "
              "Client.permit_expirable_semaphore(name).",
    .tp_basicsize = sizeof(rlpy_expirable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)expirable_init,
    .tp_dealloc = (destructor)expirable_dealloc,
    .tp_repr = (reprfunc)expirable_repr,
    .tp_methods = expirable_methods,
    .tp_getset = expirable_getset,
};

rl_expirable *rlpy_expirable_core(PyObject *obj, rl_client **client) {
    if (!PyObject_TypeCheck(obj, &rlpy_expirable_type) || !((rlpy_expirable *)obj)->sem) {
        PyErr_Format(PyExc_TypeError,
                     "a redlease permit-expirable semaphore was expected, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (client && !(*client = rlpy_open_client(((rlpy_expirable *)obj)->named.client))) return NULL;
    return ((rlpy_expirable *)obj)->sem;
}
