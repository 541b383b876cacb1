/* redlease.CountDownLatch: Redisson's RCountDownLatch (the core's rl_countdown). */
#include "binding.h"

typedef struct {
    PyObject_HEAD rl_countdown *latch;
    rlpy_named named;
} rlpy_countdown;

static int countdown_init(rlpy_countdown *self, PyObject *args, PyObject *kwargs) {
    PyObject *client, *name;
    rl_client *core;
    const char *bytes;
    size_t len;
    rl_error err;
    if (rlpy_named_parse(args, kwargs, "CountDownLatch", self->latch != NULL, &client, &name, &core,
                         &bytes, &len) < 0)
        return -1;
    return rlpy_named_made(&self->named, client, name,
                           rl_countdown_new(core, bytes, len, &self->latch, &err), &err);
}

static void countdown_dealloc(rlpy_countdown *self) {
    rl_countdown_free(self->latch);
    rlpy_named_dealloc((PyObject *)self, &self->named);
}

static int ready(rlpy_countdown *self) {
    return rlpy_named_ready(self->latch != NULL, "CountDownLatch");
}

static PyObject *countdown_try_set_count(rlpy_countdown *self, PyObject *arg) {
    long long count = ready(self) ? PyLong_AsLongLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    int set = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_countdown_try_set_count(self->latch, count, &set, &err));
    return st == RL_OK ? PyBool_FromLong(set) : rlpy_raise(&err);
}

static PyObject *countdown_count_down(rlpy_countdown *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_countdown_count_down(self->latch, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *countdown_count(rlpy_countdown *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int64_t n = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_countdown_count(self->latch, &n, &err));
    return st == RL_OK ? PyLong_FromLongLong(n) : rlpy_raise(&err);
}

static PyObject *countdown_wait(rlpy_countdown *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"timeout", NULL};
    PyObject *timeout = NULL;
    if (!ready(self) || !PyArg_ParseTupleAndKeywords(args, kwargs, "|O:wait", keywords, &timeout))
        return NULL;
    int64_t wait_ms = RL_WAIT_FOREVER;
    if (timeout && rlpy_timeout_ms(timeout, "timeout", &wait_ms) < 0) return NULL;
    if (rlpy_refuse_loop_wait("CountDownLatch.wait()", wait_ms, "Client.count_down_latch()") < 0 ||
        rlpy_refuse_green_wait("CountDownLatch.wait()", wait_ms) < 0)
        return NULL;
    rlpy_wait w;
    if (rlpy_wait_start(&w, wait_ms) < 0) return NULL;
    rl_error err;
    rl_status st;
    RLPY_WAITING(&w, st = rl_countdown_wait(self->latch, wait_ms, w.hook, &w, &err));
    if (st == RL_OK) Py_RETURN_TRUE;
    if (st == RL_NOT_ACQUIRED) Py_RETURN_FALSE;
    return rlpy_raise(&err);
}

static PyObject *countdown_delete(rlpy_countdown *self, PyObject *unused) {
    (void)unused;
    if (!ready(self)) return NULL;
    int deleted = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_countdown_delete(self->latch, &deleted, &err));
    return st == RL_OK ? PyBool_FromLong(deleted) : rlpy_raise(&err);
}

static PyObject *countdown_get_name(rlpy_countdown *self, void *unused) {
    (void)unused;
    return ready(self) ? Py_NewRef(self->named.name) : NULL;
}

static PyObject *countdown_repr(rlpy_countdown *self) {
    if (!self->latch) return PyUnicode_FromString("<redlease.CountDownLatch (uninitialised)>");
    return PyUnicode_FromFormat("<redlease.CountDownLatch %R>", self->named.name);
}

static PyMethodDef countdown_methods[] = {
    {"try_set_count", (PyCFunction)countdown_try_set_count, METH_O,
     "try_set_count(count) -> bool\n--\n\nSets the count (>= 1) when the latch does not exist; "
     "False when it exists (left alone)."},
    {"count_down", (PyCFunction)countdown_count_down, METH_NOARGS,
     "count_down() -> None\n--\n\nCounts down by one; at 0 the latch is deleted and every "
     "waiter wakes."},
    {"count", (PyCFunction)countdown_count, METH_NOARGS,
     "count() -> int\n--\n\nThe count now (0 when the latch does not exist)."},
    {"wait", (PyCFunction)(void (*)(void))countdown_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=-1) -> bool\n--\n\nWaits until the count is 0. timeout: seconds, -1 forever, "
     "0 one look. False when it was not 0 in time."},
    {"delete", (PyCFunction)countdown_delete, METH_NOARGS,
     "delete() -> bool\n--\n\nDeletes the latch whatever its count; True if it existed."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef countdown_getset[] = {
    {"name", (getter)countdown_get_name, NULL, "The latch's name, as given.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_countdown_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease.CountDownLatch",
    .tp_doc = "A Redisson RCountDownLatch; made by Client.count_down_latch(name).",
    .tp_basicsize = sizeof(rlpy_countdown),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)countdown_init,
    .tp_dealloc = (destructor)countdown_dealloc,
    .tp_repr = (reprfunc)countdown_repr,
    .tp_methods = countdown_methods,
    .tp_getset = countdown_getset,
};

rl_countdown *rlpy_countdown_core(PyObject *obj, rl_client **client) {
    if (!PyObject_TypeCheck(obj, &rlpy_countdown_type) || !((rlpy_countdown *)obj)->latch) {
        PyErr_Format(PyExc_TypeError, "a redlease count-down latch was expected, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (client && !(*client = rlpy_open_client(((rlpy_countdown *)obj)->named.client))) return NULL;
    return ((rlpy_countdown *)obj)->latch;
}
