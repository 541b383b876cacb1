/* redlease._core: module setup, owner contexts and the status -> exception mapping. */
#include "async.h" /* first: Python.h before any system header */

#include <pthread.h>
#include <stdint.h>
#include <string.h>

static PyObject *errors_module; /* redlease._errors, where the exception classes live */
static PyObject *error_classes[RL_ERR_REPLICA + 1];

static _Thread_local uint64_t thread_context;
static pthread_key_t context_key;
static pthread_once_t context_key_once = PTHREAD_ONCE_INIT;

/* Runs as the thread exits (a pthread key destructor), outside Python: a thread that ended
 * while holding locks must not keep them renewed for the life of the client. */
static void thread_ended(void *context) {
    rl_context_ended((uint64_t)(uintptr_t)context);
}

static void make_context_key(void) {
    pthread_key_create(&context_key, thread_ended);
}

uint64_t rlpy_thread_context(void) {
    if (!thread_context) {
        thread_context = rl_context_new(); /* the counter asyncio tasks' contexts come from */
        pthread_once(&context_key_once, make_context_key);
        pthread_setspecific(context_key, (void *)(uintptr_t)thread_context);
    }
    return thread_context;
}

int rlpy_is_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

PyObject *rlpy_error_class(rl_status status) {
    if ((int)status >= 0 && (size_t)status < sizeof error_classes / sizeof *error_classes &&
        error_classes[status])
        return error_classes[status];
    return error_classes[RL_OK]; /* LockError */
}

/* The core says a hold "is not held by this context"; the user knows a thread, a task or a
 * greenlet, and may have meant to release it elsewhere: say what the host calls an owner and
 * how a hold is released by another one. */
static PyObject *raise_not_owned(PyObject *cls, const rl_error *err, const char *owner) {
    rl_error named = *err;
    if (!rl_error_name_owner(&named, owner)) {
        PyErr_SetString(cls, err->message);
        return NULL;
    }
    const char *hint = "";
    if (strncmp(err->message, "lock ", 5) == 0)
        hint = strcmp(owner, "task") == 0
                   ? "; a hold belongs to the task that acquired it: release it in that task"
               : strcmp(owner, "greenlet") == 0
                   ? "; a hold belongs to the greenlet that acquired it: to release it in "
                     "another greenlet, call lock.hand_off() in the holding one and pass "
                     "its token to lock.release(token=...)"
                   : "; a hold belongs to the thread that acquired it: to release it in "
                     "another thread, call lock.hand_off() in the holding one and pass "
                     "its token to lock.release(token=...)";
    PyErr_Format(cls, "%s%s", named.message, hint);
    return NULL;
}

PyObject *rlpy_raise_for(const rl_error *err, const char *owner) {
    if (err->status == RL_NOT_OWNED)
        return raise_not_owned(rlpy_error_class(RL_NOT_OWNED), err,
                               rlpy_green_active() ? "greenlet" : owner);
    return rlpy_raise(err);
}

PyObject *rlpy_raise(const rl_error *err) {
    if (err->status == RL_ABORTED && PyErr_Occurred()) return NULL; /* e.g. KeyboardInterrupt */
    if (err->status == RL_NOT_OWNED) return rlpy_raise_for(err, "thread");
    PyObject *cls = rlpy_error_class(err->status);
    if (err->status == RL_LOST) {
        /* LockLostError(message, reason) */
        PyObject *exc = PyObject_CallFunction(
            cls, "ss", err->message, rl_lost_reason_name((rl_lost_reason)err->lost_reason));
        if (exc) {
            PyErr_SetObject(cls, exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    PyErr_SetString(cls, err->message[0] ? err->message : rl_status_name(err->status));
    return NULL;
}

static int load_error_classes(void) {
    static const struct {
        rl_status status;
        const char *name;
    } from_errors[] = {
        {RL_OK, "LockError"}, /* the fallback for anything unexpected */
        {RL_NOT_ACQUIRED, "LockTimeout"},
        {RL_NOT_OWNED, "NotOwnedError"},
        {RL_LOST, "LockLostError"},
        {RL_ABORTED, "LockError"},
        {RL_IN_DOUBT, "LockInDoubtError"},
        {RL_ERR_CONNECTION, "ConnectionError"},
        {RL_ERR_SERVER, "ServerError"},
        {RL_ERR_CLOSED, "ClientClosedError"},
        {RL_ERR_REPLICA, "ReplicaSyncError"},
    };
    errors_module = PyImport_ImportModule("redlease._errors");
    if (!errors_module) return -1;
    for (size_t i = 0; i < sizeof from_errors / sizeof *from_errors; i++) {
        PyObject *cls = PyObject_GetAttrString(errors_module, from_errors[i].name);
        if (!cls) return -1;
        error_classes[from_errors[i].status] = cls; /* kept for the life of the process */
    }
    error_classes[RL_ERR_ARGUMENT] = Py_NewRef(PyExc_ValueError);
    error_classes[RL_ERR_UNSUPPORTED] = Py_NewRef(PyExc_ValueError);
    error_classes[RL_ERR_MEMORY] = Py_NewRef(PyExc_MemoryError);
    return 0;
}

static PyObject *current_context(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyLong_FromUnsignedLongLong(rlpy_owner_context());
}

static PyObject *tls_supported(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyBool_FromLong(rl_tls_supported());
}

static PyMethodDef module_methods[] = {
    {"_set_green", rlpy_set_green, METH_VARARGS,
     "_set_green(context_source, acquire_hook) -> None\n--\n\nInstalled by redlease._green "
     "under gevent (None, None: off)."},
    {"tls_supported", tls_supported, METH_NOARGS,
     "tls_supported() -> bool\n--\n\nWhether this build speaks TLS (rediss:// URLs)."},
    {"current_context", current_context, METH_NOARGS,
     "current_context() -> int\n--\n\nThe owner context id of the calling thread (the part after "
     "the client id in a lock's hash field)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "redlease._core",
    .m_doc = "The C core of redlease and its thin CPython binding.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* The names of the core's lost reasons, in the order of rl_lost_reason (RL_LOST_NONE left out). */
static PyObject *lost_reasons(void) {
    PyObject *names = PyTuple_New(RL_LOST_REASON_COUNT - 1);
    for (int r = RL_LOST_EXPIRED; names && r < RL_LOST_REASON_COUNT; r++) {
        PyObject *name = PyUnicode_FromString(rl_lost_reason_name((rl_lost_reason)r));
        if (!name) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, r - RL_LOST_EXPIRED, name);
    }
    return names;
}

PyMODINIT_FUNC PyInit__core(void) {
    if (load_error_classes() < 0) return NULL;
    if (PyType_Ready(&rlpy_client_type) < 0 || PyType_Ready(&rlpy_lock_type) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    PyObject *reasons = lost_reasons();
    int added = reasons && PyModule_AddObjectRef(m, "LOST_REASONS", reasons) == 0;
    Py_XDECREF(reasons);
    if (!added || PyModule_AddObjectRef(m, "Client", (PyObject *)&rlpy_client_type) < 0 ||
        PyModule_AddObjectRef(m, "Lock", (PyObject *)&rlpy_lock_type) < 0 ||
        PyModule_AddStringConstant(m, "CORE_VERSION", RL_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "KIND_FENCED", RL_LOCK_FENCED) < 0 ||
        PyModule_AddIntConstant(m, "KIND_FAIR", RL_LOCK_FAIR) < 0 ||
        PyModule_AddIntConstant(m, "KIND_READ", RL_LOCK_READ) < 0 ||
        PyModule_AddIntConstant(m, "KIND_WRITE", RL_LOCK_WRITE) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_LOST", RL_EVENT_LOST) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_RENEW_FAILED", RL_EVENT_RENEW_FAILED) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_RENEWED", RL_EVENT_RENEWED) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_SYNC_FAILED", RL_EVENT_SYNC_FAILED) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_STRAY_HOLDS", RL_EVENT_STRAY_HOLDS) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_ABANDONED", RL_EVENT_ABANDONED) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_IN_DOUBT", RL_EVENT_IN_DOUBT) < 0 ||
        PyModule_AddIntConstant(m, "HOLD_NONE", RL_HOLD_NONE) < 0 ||
        PyModule_AddIntConstant(m, "HOLD_HELD", RL_HOLD_HELD) < 0 ||
        PyModule_AddIntConstant(m, "HOLD_IN_DOUBT", RL_HOLD_IN_DOUBT) < 0 ||
        PyModule_AddIntConstant(m, "HOLD_LOST", RL_HOLD_LOST) < 0 ||
        PyModule_AddIntConstant(m, "EVENT_CONFIRMED", RL_EVENT_CONFIRMED) < 0 ||
        rlpy_family_add_types(m) < 0 || rlpy_async_add_types(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
