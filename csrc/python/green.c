/* Green threads (gevent): when redlease._green has found threading monkey-patched, it installs
 * two hooks here. The owner context of a call is then the greenlet's (the context source), and a
 * lock acquire that may wait goes through the core's async call, waited for on the hub (the
 * acquire hook), so that a wait never blocks the other greenlets of the OS thread. */
#include "binding.h"

static PyObject *context_source; /* () -> int, or NULL: the OS thread's context */
static PyObject *acquire_hook;   /* (lock, context, timeout s, lease s|None, max_hold ms) -> bool */

int rlpy_green_active(void) {
    return acquire_hook != NULL;
}

uint64_t rlpy_owner_context(void) {
    if (!context_source) return rlpy_thread_context();
    PyObject *r = PyObject_CallNoArgs(context_source);
    unsigned long long context = r ? PyLong_AsUnsignedLongLong(r) : 0;
    Py_XDECREF(r);
    if (PyErr_Occurred()) { /* never happens with redlease._green's source */
        PyErr_WriteUnraisable(context_source);
        return rlpy_thread_context();
    }
    return context;
}

int rlpy_green_acquire(PyObject *lock, uint64_t context, int64_t lease_ms, int64_t wait_ms,
                       int64_t max_hold_ms) {
    PyObject *lease = lease_ms == RL_LEASE_WATCHDOG ? Py_NewRef(Py_None)
                                                    : PyFloat_FromDouble((double)lease_ms / 1000);
    PyObject *r =
        lease ? PyObject_CallFunction(acquire_hook, "OKdOL", lock, (unsigned long long)context,
                                      wait_ms < 0 ? -1.0 : (double)wait_ms / 1000, lease,
                                      (long long)max_hold_ms)
              : NULL;
    Py_XDECREF(lease);
    int got = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    return got;
}

PyObject *rlpy_set_green(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *source, *hook;
    if (!PyArg_ParseTuple(args, "OO:_set_green", &source, &hook)) return NULL;
    if ((source != Py_None && !PyCallable_Check(source)) ||
        (hook != Py_None && !PyCallable_Check(hook))) {
        PyErr_SetString(PyExc_TypeError, "_set_green takes two callables or None");
        return NULL;
    }
    Py_XSETREF(context_source, source == Py_None ? NULL : Py_NewRef(source));
    Py_XSETREF(acquire_hook, hook == Py_None ? NULL : Py_NewRef(hook));
    Py_RETURN_NONE;
}
