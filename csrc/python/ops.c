/* Operating redlease from Python: Lock.extend/reacquire/hand_off/owner, release with a token,
 * and the client's inspect, scan and watch steps. Thin: rl_inspect and the others do the work;
 * this file turns their structs into dicts. */
#include "binding.h" /* first: Python.h before any system header */

#include <math.h>

static PyObject *seconds_or_none(int64_t ms) {
    if (ms == -2) Py_RETURN_NONE;
    return PyFloat_FromDouble(ms == -1 ? INFINITY : (double)ms / 1000.0);
}

/* A client's name, None when no connection of it told the lock's server. */
static PyObject *name_or_none(const char *name) {
    if (!name[0]) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "replace");
}

static PyObject *owner_dict(const rl_owner_info *o) {
    return Py_BuildValue("{sssssssLsNsOsOsN}", "field", o->field, "client_id", o->client_id,
                         "context", o->context, "count", (long long)o->count, "lease",
                         seconds_or_none(o->lease_ms), "write", o->write ? Py_True : Py_False,
                         "local", o->local ? Py_True : Py_False, "name", name_or_none(o->name));
}

static PyObject *owners_list(const rl_inspection *in) {
    PyObject *list = PyList_New((Py_ssize_t)in->n_owners);
    for (size_t i = 0; list && i < in->n_owners; i++) {
        PyObject *d = owner_dict(&in->owners[i]);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *queue_list(const rl_inspection *in) {
    PyObject *list = PyList_New((Py_ssize_t)in->n_queue);
    for (size_t i = 0; list && i < in->n_queue; i++) {
        const rl_waiter_info *w = &in->queue[i];
        PyObject *d = Py_BuildValue("{sssssssdsN}", "owner", w->owner, "client_id", w->client_id,
                                    "context", w->context, "timeout",
                                    (double)w->timeout_ms / 1000.0, "name", name_or_none(w->name));
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *inspection_dict(const rl_inspection *in) {
    PyObject *owners = owners_list(in), *queue = owners ? queue_list(in) : NULL;
    if (!owners || !queue) {
        Py_XDECREF(owners);
        return NULL;
    }
    return Py_BuildValue("{sssssz#sNsLsLsLsNsN}", "kind", rl_key_kind_name(in->kind), "type",
                         in->type, "mode", in->mode[0] ? in->mode : NULL,
                         (Py_ssize_t)strlen(in->mode), "lease", seconds_or_none(in->lease_ms),
                         "count", (long long)in->count, "last_token", (long long)in->last_token,
                         "subscribers", (long long)in->subscribers, "owners", owners, "queue",
                         queue);
}

/* rl_inspect with the GIL released; NULL with the exception set. */
static rl_inspection *inspect(rl_client *client, PyObject *name) {
    const char *bytes;
    Py_ssize_t len;
    if (rlpy_name_bytes(name, &bytes, &len) < 0) return NULL;
    rl_inspection *in = NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_inspect(client, bytes, (size_t)len, &in, &err));
    if (st != RL_OK) rlpy_raise(&err);
    return in;
}

PyObject *rlpy_client_inspect(PyObject *client, PyObject *name) {
    rl_client *core = rlpy_open_client(client);
    rl_inspection *in = core ? inspect(core, name) : NULL;
    if (!in) return NULL;
    PyObject *d = inspection_dict(in);
    rl_inspection_free(in);
    return d;
}

PyObject *rlpy_client_scan(PyObject *client, PyObject *args) {
    unsigned long long cursor;
    const char *pattern = NULL;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "Kzn:scan_step", &cursor, &pattern, &count)) return NULL;
    rl_client *core = rlpy_open_client(client);
    if (!core) return NULL;
    if (count < 1) {
        PyErr_SetString(PyExc_ValueError, "count must be from 1 to 10000");
        return NULL;
    }
    rl_scan_page *page = NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_scan_locks(core, cursor, pattern, (size_t)count, &page, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    PyObject *names = PyList_New((Py_ssize_t)page->n);
    for (size_t i = 0; names && i < page->n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(page->names[i], (Py_ssize_t)page->lens[i]);
        if (!b) {
            Py_CLEAR(names);
            break;
        }
        PyList_SET_ITEM(names, (Py_ssize_t)i, b);
    }
    PyObject *result = names ? Py_BuildValue("(KNn)", (unsigned long long)page->next, names,
                                             (Py_ssize_t)page->looked_at)
                             : NULL;
    rl_scan_page_free(page);
    return result;
}

PyObject *rlpy_client_watch_wait(PyObject *client, PyObject *args) {
    PyObject *name, *timeout;
    if (!PyArg_ParseTuple(args, "OO:watch_wait", &name, &timeout)) return NULL;
    rl_client *core = rlpy_open_client(client);
    const char *bytes;
    Py_ssize_t len;
    int64_t ms;
    if (!core || rlpy_name_bytes(name, &bytes, &len) < 0 ||
        rlpy_nonnegative_ms(timeout, "timeout", &ms) < 0)
        return NULL;
    rlpy_wait w;
    if (rlpy_wait_start(&w, ms) < 0) return NULL;
    int notified = 0;
    rl_error err;
    rl_status st;
    RLPY_WAITING(&w, st = rl_watch_wait(core, bytes, (size_t)len, ms, w.hook, &w, &notified, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    return PyBool_FromLong(notified);
}

/* ---- Lock methods ------------------------------------------------------------------------- */

PyObject *rlpy_lock_extend(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"additional_time", "replace_ttl", NULL};
    PyObject *seconds;
    int replace = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:extend", keywords, &seconds, &replace))
        return NULL;
    rl_lock *lock = rlpy_lock_core(self);
    int64_t ms;
    if (!lock || rlpy_positive_ms(seconds, "additional_time", &ms) < 0) return NULL;
    uint64_t context = rlpy_owner_context();
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_lock_extend(lock, context, ms, replace, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_TRUE;
}

PyObject *rlpy_lock_reacquire(PyObject *self, PyObject *unused) {
    (void)unused;
    rl_lock *lock = rlpy_lock_core(self);
    if (!lock) return NULL;
    uint64_t context = rlpy_owner_context();
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_lock_reacquire(lock, context, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_TRUE;
}

PyObject *rlpy_lock_hand_off(PyObject *self, PyObject *unused) {
    (void)unused;
    rl_lock *lock = rlpy_lock_core(self);
    if (!lock) return NULL;
    char token[RL_TOKEN_MAX];
    rl_error err;
    rl_status st;
    uint64_t context = rlpy_owner_context();
    RLPY_UNLOCKED(st = rl_lock_hand_off(lock, context, token, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    return PyUnicode_FromString(token);
}

PyObject *rlpy_lock_release_token(PyObject *self, PyObject *token) {
    rl_lock *lock = rlpy_lock_core(self);
    if (!lock) return NULL;
    if (!PyUnicode_Check(token)) {
        PyErr_Format(PyExc_TypeError, "a hand-off token is a str, not %.100s",
                     Py_TYPE(token)->tp_name);
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8(token);
    if (!text) return NULL;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_lock_release_token(lock, text, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    Py_RETURN_NONE;
}

/* lock.owner()'s answer: redlease.Owner objects (python/redlease/_ops.py) of the owner dicts. */
PyObject *rlpy_owner_objects(const rl_inspection *in) {
    PyObject *ops = PyImport_ImportModule("redlease._ops");
    PyObject *owner = ops ? PyObject_GetAttrString(ops, "Owner") : NULL;
    Py_XDECREF(ops);
    PyObject *empty = owner ? PyTuple_New(0) : NULL;
    PyObject *list = empty ? owners_list(in) : NULL;
    for (Py_ssize_t i = 0; list && i < PyList_GET_SIZE(list); i++) {
        PyObject *o = PyObject_Call(owner, empty, PyList_GET_ITEM(list, i));
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, i, o); /* drops the dict */
    }
    Py_XDECREF(empty);
    Py_XDECREF(owner);
    return list;
}

PyObject *rlpy_lock_owners(PyObject *self, rl_client *client, PyObject *name) {
    if (!rlpy_lock_core(self)) return NULL;
    rl_inspection *in = inspect(client, name);
    if (!in) return NULL;
    PyObject *list = rlpy_owner_objects(in);
    rl_inspection_free(in);
    return list;
}
