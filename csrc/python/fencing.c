/* Fencing checked by Redis-stored data, from Python: the client's fenced_set and fence_drop
 * (rl_fenced_set, rl_fence_drop do the work; redlease.fencing wraps them). */
#include "binding.h"

/* fenced_set(key, value, token) -> (written, fence before) */
PyObject *rlpy_client_fenced_set(PyObject *client, PyObject *args) {
    PyObject *key, *value;
    long long token;
    if (!PyArg_ParseTuple(args, "OOL", &key, &value, &token)) return NULL;
    rl_client *core = rlpy_open_client(client);
    if (!core) return NULL;
    const char *k, *v;
    Py_ssize_t k_len, v_len;
    if (rlpy_name_bytes(key, &k, &k_len) < 0 || rlpy_name_bytes(value, &v, &v_len) < 0) return NULL;
    int written = 0;
    int64_t fence = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_fenced_set(core, k, (size_t)k_len, v, (size_t)v_len, (int64_t)token,
                                     &written, &fence, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    return Py_BuildValue("(OL)", written ? Py_True : Py_False, (long long)fence);
}

/* fence_drop(name) -> the counter's last value (0 none), -1 when the lock is held */
PyObject *rlpy_client_fence_drop(PyObject *client, PyObject *name) {
    rl_client *core = rlpy_open_client(client);
    if (!core) return NULL;
    const char *bytes;
    Py_ssize_t len;
    if (rlpy_name_bytes(name, &bytes, &len) < 0) return NULL;
    int64_t dropped = 0;
    rl_error err;
    rl_status st;
    RLPY_UNLOCKED(st = rl_fence_drop(core, bytes, (size_t)len, &dropped, &err));
    if (st != RL_OK) return rlpy_raise(&err);
    return PyLong_FromLongLong((long long)dropped);
}
