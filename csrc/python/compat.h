/* What CPython 3.10 added to the C API and the binding uses, for CPython 3.9. */
#ifndef RLPY_COMPAT_H
#define RLPY_COMPAT_H

#include <Python.h>

#if PY_VERSION_HEX < 0x030A0000
/* macros over functions, as CPython's own: they take any object pointer */
static inline PyObject *rlpy_new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}
#define Py_NewRef(o) rlpy_new_ref((PyObject *)(o))

static inline PyObject *rlpy_xnew_ref(PyObject *o) {
    Py_XINCREF(o);
    return o;
}
#define Py_XNewRef(o) rlpy_xnew_ref((PyObject *)(o))

static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *value) {
    Py_INCREF(value);
    if (PyModule_AddObject(m, name, value) < 0) { /* steals value only on success */
        Py_DECREF(value);
        return -1;
    }
    return 0;
}

/* 3.9 converts a float with __int__ (and a DeprecationWarning); 3.10 refuses it: refuse it here
 * too, with 3.10's TypeError */
static inline long long rlpy_as_long_long(PyObject *o) {
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "'%.200s' object cannot be interpreted as an integer",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    return PyLong_AsLongLong(o);
}
#define PyLong_AsLongLong(o) rlpy_as_long_long(o)
#endif

#endif
