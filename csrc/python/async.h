/* The bridge between the core's async calls and an event loop (asyncio, gevent's hub).
 *
 * A Completions object owns a wake-up descriptor (an eventfd on Linux, a pipe on macOS) and a
 * queue. The core reports a call's end on one of its worker threads: the answer is stored in the
 * call and queued without taking the GIL, and the wake-up is written when the queue was empty. The
 * loop watches the fd (add_reader, or a gevent io watcher) and runs Completions.run(), which calls
 * each call's Python `done` under one GIL take for the whole batch. */
#ifndef RLPY_ASYNC_H
#define RLPY_ASYNC_H

#include "binding.h" /* first: Python.h before any system header */

#include <pthread.h>

typedef struct rlpy_call rlpy_call;

typedef struct {
    PyObject_HEAD int fd; /* the descriptor the loop watches; -1 once closed */
    int wake;             /* the one the core's threads write: fd itself for an eventfd */
    pthread_mutex_t mu;
    rlpy_call *head, *tail; /* ended calls whose `done` has not run */
} rlpy_completions;

typedef enum {
    CALL_ACQUIRE,
    CALL_RELEASE,
    CALL_QUERY,
    CALL_FORCE_UNLOCK,
    CALL_OWNER,  /* lock.owner(): list[Owner] */
    CALL_WAIT,   /* a family wait: True; not in time: LockTimeout; cancelled: None */
    CALL_PERMIT, /* a permit acquire: its id; as CALL_WAIT otherwise */
    CALL_RUN     /* a family call of one step (family_calls.c): its answer as `answer` says */
} rlpy_call_kind;

struct rlpy_call {
    PyObject_HEAD rl_call *call;
    rlpy_call_kind kind;
    PyObject *lock; /* kept alive while the core may use it */
    PyObject *done; /* done(value, error) */
    rlpy_completions *completions;
    /* the answer, written by the core's thread before the call is queued */
    rl_status status;
    int64_t value;
    rl_error err;
    rlpy_call *next;
    /* family calls (family_calls.c): what the core call works on and with, kept here until the
     * call has ended */
    void *target;
    int op;
    int64_t a, b;
    char id[RL_PERMIT_ID_LEN + 1];
};

/* A new Call of `kind` on `obj` (kept alive with `done` while the core may use them), holding
 * the core's reference too; NULL with an exception set. */
rlpy_call *rlpy_new_call(rlpy_completions *q, rlpy_call_kind kind, PyObject *obj, PyObject *done);
/* The call started (RL_OK: the Call) or not (its references go; the exception is raised). */
PyObject *rlpy_call_started(rlpy_call *c, rl_status st, const rl_error *err);
/* The Python answer of an ended CALL_RUN call (a new reference). */
PyObject *rlpy_run_answer(const rlpy_call *c);

extern PyTypeObject rlpy_completions_type, rlpy_call_type;

/* The core's done callback: queues the call on its Completions (any thread, no GIL). */
void rlpy_call_ended(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud);

/* Readies both types and adds Completions to the module; -1 with an exception set. */
int rlpy_async_add_types(PyObject *module);

#endif
