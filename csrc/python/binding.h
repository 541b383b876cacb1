/* redlease._core: the CPython binding's shared declarations. The binding converts arguments,
 * releases the GIL around every core call that may wait, and maps core statuses to the
 * exceptions of redlease._errors. All lock logic is in the core. */
#ifndef RLPY_BINDING_H
#define RLPY_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "redlease.h"

typedef struct rlpy_event_bridge rlpy_event_bridge;

typedef struct {
    PyObject_HEAD rl_client *client; /* NULL once closed */
    rlpy_event_bridge *bridge;
} rlpy_client;

extern PyTypeObject rlpy_client_type;
extern PyTypeObject rlpy_lock_type;

/* The owner context of the calling OS thread: a process-wide counter handed out on a thread's
 * first use, so a new thread never inherits the id (and holds) of a finished one. */
uint64_t rlpy_thread_context(void);

/* Runs `call` (a core call that may wait on the network) with the GIL released. */
#define RLPY_UNLOCKED(call)                                                                        \
    do {                                                                                           \
        PyThreadState *rlpy_saved_ = PyEval_SaveThread();                                          \
        call;                                                                                      \
        PyEval_RestoreThread(rlpy_saved_);                                                         \
    } while (0)

/* Sets the Python exception for a failed core call and returns NULL. */
PyObject *rlpy_raise(const rl_error *err);
/* The exception class redlease._errors defines for a status (borrowed reference). */
PyObject *rlpy_error_class(rl_status status);

/* Seconds (int or float) to milliseconds, rounded up so a positive value never becomes 0.
 * -1 means "forever" for timeouts; None means "watchdog" for leases. 0 on success, -1 with a
 * TypeError/ValueError set. */
int rlpy_timeout_ms(PyObject *value, const char *what, int64_t *out);
int rlpy_lease_ms(PyObject *value, int64_t *out);
int rlpy_positive_ms(PyObject *value, const char *what, int64_t *out);
/* None leaves *out as it is (the core's default), else as rlpy_positive_ms. */
int rlpy_optional_ms(PyObject *value, const char *what, int64_t *out);
/* None -> RL_MAX_HOLD_NONE (no cap), else seconds > 0. */
int rlpy_max_hold_ms(PyObject *value, int64_t *out);

/* Closes the core client with the GIL released; safe from the event thread too. */
void rlpy_client_close(rlpy_client *self);

int rlpy_is_finalizing(void);

#endif
