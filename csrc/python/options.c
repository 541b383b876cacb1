/* The client's options from Python keywords, by the core's catalogue (rl_option_at): each keyword
 * names a row, and its value is converted by the row's kind. None leaves an option at its
 * default. A new option in the catalogue is a new keyword here with no change to this file. */
#include "binding.h" /* first: Python.h before any system header */

#include <string.h>

/* A str, or with `path` an os.PathLike giving one; a new reference, or NULL with TypeError. */
static PyObject *text_of(PyObject *value, const char *name, int path) {
    PyObject *s = path ? PyOS_FSPath(value) : Py_NewRef(value);
    if (!s) return NULL;
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be %s or None, not %.100s", name,
                     path ? "a str or os.PathLike" : "a str", Py_TYPE(value)->tp_name);
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

static int bounds_error(const rl_option_info *row) {
    char bounds[96];
    rl_option_bounds(row, bounds, sizeof bounds);
    PyErr_Format(PyExc_ValueError, "%s %s", row->name, bounds);
    return -1;
}

/* A fraction (parts per million in the core), within the row's bounds. */
static int fraction_of(PyObject *value, const rl_option_info *row, int64_t *out) {
    double f = PyFloat_AsDouble(value);
    if (f == -1.0 && PyErr_Occurred()) return -1;
    if (!(f * 1e6 >= (double)row->min && f * 1e6 <= (double)row->max)) return bounds_error(row);
    *out = (int64_t)(f * 1e6 + 0.5);
    return 0;
}

/* A whole number; the core holds it to its bounds. */
static int count_of(PyObject *value, const char *name, int64_t *out) {
    PyObject *n = PyNumber_Index(value);
    if (!n) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(n);
    Py_DECREF(n);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v > INT32_MAX || v < INT32_MIN) { /* an int field */
        PyErr_Format(PyExc_OverflowError, "%s is too large", name);
        return -1;
    }
    *out = v;
    return 0;
}

static int set_one(rl_options *o, const rl_option_info *row, PyObject *value, PyObject *keep) {
    int64_t n = 0;
    switch (row->kind) {
    case RL_OPTION_MS:
        /* 0 is a user's value only where it is a value and not the "none" default */
        if (row->min == 0 && !(row->flags & RL_OPTION_ZERO_NONE)) {
            if (rlpy_nonnegative_ms(value, row->name, &n) < 0) return -1;
        } else if (rlpy_positive_ms(value, row->name, &n) < 0) {
            return -1;
        }
        break;
    case RL_OPTION_COUNT:
        if (count_of(value, row->name, &n) < 0) return -1;
        break;
    case RL_OPTION_PPM:
        if (fraction_of(value, row, &n) < 0) return -1;
        break;
    case RL_OPTION_FLAG:
        if ((n = PyObject_IsTrue(value)) < 0) return -1;
        break;
    case RL_OPTION_TEXT:
    case RL_OPTION_PATH: {
        PyObject *s = text_of(value, row->name, row->kind == RL_OPTION_PATH);
        if (!s) return -1;
        Py_ssize_t len;
        const char *text = PyUnicode_AsUTF8AndSize(s, &len);
        /* the list keeps the text alive until the core has copied it */
        int kept = text ? PyList_Append(keep, s) : -1;
        Py_DECREF(s);
        if (kept < 0) return -1;
        if ((size_t)len != strlen(text)) {
            PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", row->name);
            return -1;
        }
        rl_option_set_text(o, row, text);
        return 0;
    }
    }
    rl_option_set(o, row, n);
    return 0;
}

int rlpy_read_options(PyObject *kwargs, rl_options *o, PyObject *keep, const char *fname) {
    if (!kwargs) return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        Py_ssize_t len;
        const char *name = PyUnicode_AsUTF8AndSize(key, &len);
        if (!name) return -1;
        const rl_option_info *row = rl_option_find(name, (size_t)len);
        if (!row || (row->flags & RL_OPTION_INTERNAL)) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname,
                         key);
            return -1;
        }
        if (value != Py_None && set_one(o, row, value, keep) < 0) return -1;
    }
    return 0;
}
