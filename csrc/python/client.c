/* redlease._core.Client: owns one rl_client; forwards the core's events to a Python callable. */
#include "binding.h" /* first: Python.h before any system header */

#include <pthread.h>
#include <signal.h>
#include <string.h>

/* Shared with the core's event thread; it outlives the Python object until that thread is gone. */
struct rlpy_event_bridge {
    PyObject *callable; /* read and cleared only with the GIL held; NULL once the client closes */
};

/* Set while the event thread runs Python code: a client closed from there (in a callback, or by
 * a garbage collection that happens to run there) must not join the thread it is running on. */
static _Thread_local int on_event_thread;

static void deliver_event(const rl_event *event, void *userdata) {
    rlpy_event_bridge *bridge = userdata;
    if (rlpy_is_finalizing()) return;
    on_event_thread = 1; /* from here on, Python (and its GC) may run on this thread */
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *fn = Py_XNewRef(bridge->callable);
    if (fn) {
        const char *text = event->message ? event->message : "";
        /* Messages may quote a lock name that is not UTF-8: never fail on it. */
        PyObject *message =
            PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "backslashreplace");
        PyObject *name = event->name
                             ? PyBytes_FromStringAndSize(event->name, (Py_ssize_t)event->name_len)
                             : Py_NewRef(Py_None);
        PyObject *result = NULL;
        if (message && name)
            result = PyObject_CallFunction(
                fn, "iOKsnO", (int)event->kind, name, (unsigned long long)event->context,
                rl_lost_reason_name(event->reason), (Py_ssize_t)event->holds, message);
        Py_XDECREF(message);
        Py_XDECREF(name);
        if (result)
            Py_DECREF(result);
        else
            PyErr_WriteUnraisable(fn);
        Py_DECREF(fn);
    }
    PyGILState_Release(gil);
    on_event_thread = 0;
}

typedef struct {
    rl_client *client;
    rlpy_event_bridge *bridge;
} deferred_close;

static void *close_later(void *arg) {
    deferred_close *d = arg;
    rl_client_free(d->client); /* joins the event thread once its callback has returned */
    PyMem_RawFree(d->bridge);
    PyMem_RawFree(d);
    return NULL;
}

/* From the event thread itself: hand the join to a short-lived thread. */
static void close_from_event_thread(rl_client *client, rlpy_event_bridge *bridge) {
    deferred_close *d = PyMem_RawMalloc(sizeof *d);
    pthread_t thread;
    pthread_attr_t attr;
    sigset_t all, old;
    int started = 0;
    if (d && pthread_attr_init(&attr) == 0) {
        *d = (deferred_close){client, bridge};
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with Python's threads */
        started = pthread_create(&thread, &attr, close_later, d) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    if (!started) {
        /* Cannot join here, cannot hand it off: leave the client open (its holds expire by
         * their lease) rather than deadlock. */
        PyMem_RawFree(d);
    }
}

void rlpy_client_close(rlpy_client *self) {
    rl_client *client = self->client;
    rlpy_event_bridge *bridge = self->bridge;
    if (!client) return;
    self->client = NULL;
    self->bridge = NULL;
    if (on_event_thread) {
        /* The events still queued are dropped: their thread is the one closing. */
        if (bridge) Py_CLEAR(bridge->callable);
        close_from_event_thread(client, bridge);
        return;
    }
    /* The GIL is released while the core stops: its event thread delivers what is queued (every
     * loss gets its on_lost call) and is joined. */
    RLPY_UNLOCKED(rl_client_free(client));
    if (bridge) Py_CLEAR(bridge->callable);
    PyMem_RawFree(bridge);
}

/* The callable may refer back to the client (a bound method of its owner): the GC must see it. */
static int client_traverse(rlpy_client *self, visitproc visit, void *arg) {
    if (self->bridge) Py_VISIT(self->bridge->callable);
    return 0;
}

static int client_clear(rlpy_client *self) {
    if (self->bridge) Py_CLEAR(self->bridge->callable); /* later events are dropped */
    return 0;
}

/* The core client with `options`, its events delivered to on_event (None: none). */
static int make_client(rlpy_client *self, const char *url, PyObject *on_event,
                       rl_options *options) {
    if (on_event != Py_None && !PyCallable_Check(on_event)) {
        PyErr_SetString(PyExc_TypeError, "on_event must be callable or None");
        return -1;
    }
    rlpy_event_bridge *bridge = NULL;
    if (on_event != Py_None) {
        bridge = PyMem_RawMalloc(sizeof *bridge);
        if (!bridge) {
            PyErr_NoMemory();
            return -1;
        }
        bridge->callable = Py_NewRef(on_event);
        options->on_event = deliver_event;
        options->event_userdata = bridge;
    }
    rl_error err;
    rl_client *client;
    if (rl_client_new(url, options, &client, &err) != RL_OK) {
        if (bridge) {
            Py_DECREF(bridge->callable);
            PyMem_RawFree(bridge);
        }
        rlpy_raise(&err);
        return -1;
    }
    self->client = client;
    self->bridge = bridge;
    return 0;
}

/* Client(url, on_event=None, **options): the options as the core's catalogue names them. */
static int client_init(rlpy_client *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"url", "on_event", NULL};
    if (self->client) {
        PyErr_SetString(PyExc_RuntimeError, "Client.__init__ called twice");
        return -1;
    }
    /* url and on_event by the usual rules; every other keyword is an option */
    PyObject *own = PyDict_New(), *given = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
    PyObject *keep = PyList_New(0); /* the option strings, until the core has copied them */
    const char *url;
    PyObject *on_event = Py_None;
    rl_options options; /* the core's defaults; None leaves an option at its default */
    rl_options_init(&options);
    int result = -1;
    if (!own || !given || !keep) goto done;
    for (char **k = keywords; *k; k++) {
        PyObject *v = PyDict_GetItemString(given, *k); /* borrowed */
        if (v && (PyDict_SetItemString(own, *k, v) < 0 || PyDict_DelItemString(given, *k) < 0))
            goto done;
    }
    if (PyArg_ParseTupleAndKeywords(args, own, "s|O:Client", keywords, &url, &on_event) &&
        rlpy_read_options(given, &options, keep, "Client") == 0)
        result = make_client(self, url, on_event, &options);
done:
    Py_XDECREF(own); /* after make_client: it may hold url */
    Py_XDECREF(given);
    Py_XDECREF(keep);
    return result;
}

static void client_dealloc(rlpy_client *self) {
    PyObject_GC_UnTrack(self);
    rlpy_client_close(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *client_close(rlpy_client *self, PyObject *unused) {
    (void)unused;
    rlpy_client_close(self);
    Py_RETURN_NONE;
}

static PyObject *client_get_id(rlpy_client *self, void *unused) {
    (void)unused;
    if (!self->client) return PyErr_Format(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    return PyUnicode_FromString(rl_client_id(self->client));
}

static PyObject *client_get_url(rlpy_client *self, void *unused) {
    (void)unused;
    if (!self->client) return PyErr_Format(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    return PyUnicode_FromString(rl_client_url(self->client));
}

static PyObject *client_get_watchdog_timeout(rlpy_client *self, void *unused) {
    (void)unused;
    if (!self->client) return PyErr_Format(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    rl_options o;
    rl_client_options(self->client, &o);
    return PyFloat_FromDouble((double)o.watchdog_timeout_ms / 1000.0);
}

static PyObject *client_get_closed(rlpy_client *self, void *unused) {
    (void)unused;
    return PyBool_FromLong(self->client == NULL);
}

static PyObject *client_stats(rlpy_client *self, PyObject *unused) {
    (void)unused;
    if (!self->client) return PyErr_Format(rlpy_error_class(RL_ERR_CLOSED), "the client is closed");
    rl_stats s;
    rl_client_stats(self->client, &s);
    PyObject *lost = PyDict_New();
    for (int r = 1; lost && r < RL_LOST_REASON_COUNT; r++) {
        PyObject *n = PyLong_FromUnsignedLongLong(s.lost[r]);
        if (!n || PyDict_SetItemString(lost, rl_lost_reason_name((rl_lost_reason)r), n) < 0)
            Py_CLEAR(lost);
        Py_XDECREF(n);
    }
    if (!lost) return NULL;
    return Py_BuildValue(
        "{sKsKsKsKsnsOsnsKsKsdsdsKsNsnsnsKsnsKsKsKsnsKsKsKsKsKsKsK}", "renew_rounds",
        (unsigned long long)s.renew_rounds, "renew_round_trips",
        (unsigned long long)s.renew_round_trips, "renew_calls", (unsigned long long)s.renew_calls,
        "renewed_holds", (unsigned long long)s.renewed_holds, "last_round_holds",
        (Py_ssize_t)s.last_round_holds, "watchdog_running", s.watchdog_running ? Py_True : Py_False,
        "subscriptions", (Py_ssize_t)s.subscriptions, "acquisitions",
        (unsigned long long)s.acquisitions, "waits", (unsigned long long)s.waits,
        "wait_seconds_total", (double)s.wait_total_us / 1e6, "wait_seconds_max",
        (double)s.wait_max_us / 1e6, "lost_total", (unsigned long long)s.lost_total, "lost", lost,
        "holds", (Py_ssize_t)s.holds, "waiters", (Py_ssize_t)s.waiters, "renew_failed_rounds",
        (unsigned long long)s.renew_failed_rounds, "last_round_nodes",
        (Py_ssize_t)s.last_round_nodes, "cluster_refreshes",
        (unsigned long long)s.cluster_refreshes, "last_round_us",
        (unsigned long long)s.last_round_us, "renew_round_us", (unsigned long long)s.renew_round_us,
        "in_doubt", (Py_ssize_t)s.in_doubt, "in_doubt_total", (unsigned long long)s.in_doubt_total,
        "server_changes", (unsigned long long)s.server_changes, "sync_waits",
        (unsigned long long)s.sync_waits, "sync_acks", (unsigned long long)s.sync_acks,
        "sync_skipped", (unsigned long long)s.sync_skipped, "woken_acquires",
        (unsigned long long)s.woken_acquires, "master_changes",
        (unsigned long long)s.master_changes);
}

static PyMethodDef client_methods[] = {
    {"close", (PyCFunction)client_close, METH_NOARGS,
     "Stops the background threads and closes the connections. Idempotent."},
    {"stats", (PyCFunction)client_stats, METH_NOARGS,
     "Counters: acquires, waits, losses by reason, holds and waiters now, renewal rounds."},
    {"inspect", (PyCFunction)rlpy_client_inspect, METH_O,
     "inspect(name) -> dict\n--\n\nWhat the key holds, decoded (see redlease.Client.inspect)."},
    {"scan_step", (PyCFunction)rlpy_client_scan, METH_VARARGS,
     "scan_step(cursor, pattern, count) -> (next cursor, [names], hash keys looked at)"},
    {"watch_wait", (PyCFunction)rlpy_client_watch_wait, METH_VARARGS,
     "watch_wait(name, timeout) -> bool\n--\n\nSleeps until the key changes or the timeout; "
     "True when keyspace notifications are on (else it only slept)."},
    {"fenced_set", (PyCFunction)rlpy_client_fenced_set, METH_VARARGS,
     "fenced_set($self, key, value, token, /) -> (written, fence before)\n--\n\n"
     "SET key value unless a newer token wrote it (see redlease.fencing.fenced_set)."},
    {"fence_drop", (PyCFunction)rlpy_client_fence_drop, METH_O,
     "fence_drop($self, name, /) -> int\n--\n\nDeletes a free fenced lock's token counter: its "
     "last "
     "value (0 none), -1 when the lock is held."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef client_getset[] = {
    {"id", (getter)client_get_id, NULL, "The client's UUID, the first part of every owner field.",
     NULL},
    {"closed", (getter)client_get_closed, NULL, "True once close() was called.", NULL},
    {"url", (getter)client_get_url, NULL, "The URL, its password replaced by ***.", NULL},
    {"watchdog_timeout", (getter)client_get_watchdog_timeout, NULL,
     "The lease of watchdog-mode holds, in seconds.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject rlpy_client_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease._core.Client",
    .tp_doc = "Client(url, on_event=None, **options)\n\n"
              "The core client; use redlease.Client. The options are the core's catalogue's "
              "(rl_option_at); None leaves an option at the core's default.",
    .tp_basicsize = sizeof(rlpy_client),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)client_init,
    .tp_dealloc = (destructor)client_dealloc,
    .tp_traverse = (traverseproc)client_traverse,
    .tp_clear = (inquiry)client_clear,
    .tp_methods = client_methods,
    .tp_getset = client_getset,
};
