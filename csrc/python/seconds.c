/* Seconds as Python numbers -> the core's milliseconds, with the library's rules for -1 and None.
 */
#include "binding.h" /* first: Python.h before any system header */

#include <math.h>

/* Beyond this many ms (about 292 years) a wait is as good as forever. */
#define MAX_MS 9.2e18

/* A real number of seconds from an int or float (bool too, as in threading); TypeError else. */
static int to_seconds(PyObject *value, const char *what, double *out) {
    if (!PyLong_Check(value) && !PyFloat_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a number of seconds, not %.100s", what,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    double s = PyFloat_AsDouble(value);
    if (s == -1.0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) { /* an int beyond any float */
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s is too large", what);
        }
        return -1;
    }
    if (isnan(s)) {
        PyErr_Format(PyExc_ValueError, "%s must not be NaN", what);
        return -1;
    }
    *out = s;
    return 0;
}

static int64_t ceil_ms(double seconds) {
    double ms = ceil(seconds * 1000.0);
    return ms >= MAX_MS ? INT64_MAX : (int64_t)ms;
}

int rlpy_timeout_ms(PyObject *value, const char *what, int64_t *out) {
    double s;
    if (to_seconds(value, what, &s) < 0) return -1;
    if (s == -1.0) {
        *out = RL_WAIT_FOREVER;
        return 0;
    }
    if (s < 0 || isinf(s)) { /* -1, not infinity, is "forever": one spelling, as threading */
        PyErr_Format(PyExc_ValueError, "%s must be a finite number >= 0, or -1 to wait forever",
                     what);
        return -1;
    }
    int64_t ms = ceil_ms(s);
    *out = ms == INT64_MAX ? RL_WAIT_FOREVER : ms;
    return 0;
}

int rlpy_positive_ms(PyObject *value, const char *what, int64_t *out) {
    double s;
    if (to_seconds(value, what, &s) < 0) return -1;
    if (!(s > 0) || isinf(s)) {
        PyErr_Format(PyExc_ValueError, "%s must be a finite number of seconds > 0", what);
        return -1;
    }
    *out = ceil_ms(s);
    return 0;
}

int rlpy_lease_ms(PyObject *value, int64_t *out) {
    if (value == Py_None) {
        *out = RL_LEASE_WATCHDOG;
        return 0;
    }
    double s;
    if (to_seconds(value, "lease", &s) < 0) return -1;
    if (!(s > 0) || isinf(s)) {
        PyErr_SetString(PyExc_ValueError,
                        "lease must be a finite number of seconds > 0, or None for the watchdog");
        return -1;
    }
    *out = ceil_ms(s);
    return 0;
}

int rlpy_max_hold_ms(PyObject *value, int64_t *out) {
    if (value == Py_None) {
        *out = RL_MAX_HOLD_NONE;
        return 0;
    }
    return rlpy_positive_ms(value, "max_hold", out);
}

int rlpy_acquire_args(PyObject *args, PyObject *kwargs, int64_t *wait_ms, int64_t *lease_ms,
                      int64_t *max_hold_ms) {
    static char *keywords[] = {"blocking", "timeout", "lease", "max_hold", NULL};
    int blocking = 1;
    PyObject *timeout = NULL, *lease = NULL, *max_hold = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pOO$O:acquire", keywords, &blocking, &timeout,
                                     &lease, &max_hold) ||
        (timeout && rlpy_timeout_ms(timeout, "timeout", wait_ms) < 0) ||
        (lease && rlpy_lease_ms(lease, lease_ms) < 0) ||
        (max_hold && rlpy_max_hold_ms(max_hold, max_hold_ms) < 0))
        return -1;
    if (!blocking) {
        if (timeout && *wait_ms != RL_WAIT_FOREVER) {
            PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
            return -1;
        }
        *wait_ms = 0;
    }
    return 0;
}

int rlpy_nonnegative_ms(PyObject *value, const char *what, int64_t *out) {
    double s;
    if (to_seconds(value, what, &s) < 0) return -1;
    if (!(s >= 0) || isinf(s)) {
        PyErr_Format(PyExc_ValueError, "%s must be a finite number of seconds >= 0", what);
        return -1;
    }
    *out = ceil_ms(s);
    return 0;
}
