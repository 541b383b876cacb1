/* What the family's types share: the Ctrl-C-aware wait hook, name and client arguments, and
 * their registration in the module. */
#include "binding.h"

#include <pthread.h>

/* The main thread's ident, asked of threading once (GIL held); a forked child asks again, as its
 * main thread is the one that forked. */
static unsigned long main_ident;
static int main_ident_known;

static void forget_main_thread(void) {
    main_ident_known = 0;
}

/* 1 in the main thread, 0 in another, -1 with an exception set. Asking runs Python code, where
 * a pending signal's handler runs too: its KeyboardInterrupt is the caller's to raise (cleared,
 * the signal would be lost and the wait would never hear it again). */
static int is_main_thread(void) {
    if (!main_ident_known) {
        static int atfork_set;
        if (!atfork_set) atfork_set = pthread_atfork(NULL, NULL, forget_main_thread) == 0;
        PyObject *threading = PyImport_ImportModule("threading");
        PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
        PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
        unsigned long found = ident ? PyLong_AsUnsignedLong(ident) : 0;
        Py_XDECREF(ident);
        Py_XDECREF(main);
        Py_XDECREF(threading);
        if (PyErr_Occurred()) return -1;
        main_ident = found;
        main_ident_known = 1;
    }
    return main_ident == PyThread_get_thread_ident();
}

int rlpy_wait_start(rlpy_wait *w, int64_t wait_ms) {
    w->thread_state = NULL;
    w->hook = NULL;
    if (wait_ms == 0) return 0;
    int is_main = is_main_thread();
    if (is_main < 0) return -1;
    if (is_main) w->hook = rlpy_wait_hook;
    return 0;
}

/* Between wait slices (~50 ms), in the main thread only (rlpy_wait_start): it runs Python's
 * signal handlers; one that raises (KeyboardInterrupt) ends the wait, and the core leaves nothing
 * held and no subscription behind. */
int rlpy_wait_hook(void *userdata) {
    rlpy_wait *w = userdata;
    PyEval_RestoreThread(w->thread_state);
    int abort = PyErr_CheckSignals() < 0;
    w->thread_state = PyEval_SaveThread();
    return abort;
}

int rlpy_name_bytes(PyObject *name, const char **bytes, Py_ssize_t *len) {
    if (PyUnicode_Check(name)) {
        *bytes = PyUnicode_AsUTF8AndSize(name, len);
        return *bytes ? 0 : -1;
    }
    if (PyBytes_Check(name)) {
        *bytes = PyBytes_AS_STRING(name);
        *len = PyBytes_GET_SIZE(name);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a name must be str or bytes, not %.100s",
                 Py_TYPE(name)->tp_name);
    return -1;
}

rl_client *rlpy_open_client(PyObject *client) {
    rl_client *core = ((rlpy_client *)client)->client;
    if (!core) PyErr_SetString(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    return core;
}

int rlpy_named_open(const char *type, int made, PyObject *client, PyObject *name, rl_client **core,
                    const char **bytes, size_t *len) {
    if (made) {
        PyErr_Format(PyExc_RuntimeError, "%s.__init__ called twice", type);
        return -1;
    }
    Py_ssize_t n;
    if (rlpy_name_bytes(name, bytes, &n) < 0 || !(*core = rlpy_open_client(client))) return -1;
    *len = (size_t)n;
    return 0;
}

int rlpy_named_parse(PyObject *args, PyObject *kwargs, const char *type, int made,
                     PyObject **client, PyObject **name, rl_client **core, const char **bytes,
                     size_t *len) {
    static char *keywords[] = {"client", "name", NULL};
    char format[64];
    snprintf(format, sizeof format, "O!O:%s", type);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &rlpy_client_type, client,
                                     name))
        return -1;
    return rlpy_named_open(type, made, *client, *name, core, bytes, len);
}

int rlpy_named_made(rlpy_named *named, PyObject *client, PyObject *name, rl_status st,
                    const rl_error *err) {
    if (st != RL_OK) {
        rlpy_raise(err);
        return -1;
    }
    named->client = Py_NewRef(client);
    named->name = Py_NewRef(name);
    return 0;
}

void rlpy_named_dealloc(PyObject *self, rlpy_named *named) {
    Py_XDECREF(named->name);
    Py_XDECREF(named->client);
    Py_TYPE(self)->tp_free(self);
}

int rlpy_named_ready(int made, const char *type) {
    if (made) return 1;
    PyErr_Format(PyExc_RuntimeError, "%s.__init__ was not called", type);
    return 0;
}

int rlpy_family_add_types(PyObject *m) {
    static const struct {
        const char *name;
        PyTypeObject *type;
    } types[] = {{"Semaphore", &rlpy_semaphore_type},
                 {"PermitExpirableSemaphore", &rlpy_expirable_type},
                 {"CountDownLatch", &rlpy_countdown_type},
                 {"MultiLock", &rlpy_multilock_type}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (PyType_Ready(types[i].type) < 0 ||
            PyModule_AddObjectRef(m, types[i].name, (PyObject *)types[i].type) < 0)
            return -1;
    return PyModule_AddIntConstant(m, "PERMIT_ID_LEN", RL_PERMIT_ID_LEN);
}
