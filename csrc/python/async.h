/* The bridge between the core's async calls and an event loop (asyncio, gevent's hub).
 *
 * A Completions object owns an eventfd and a queue. The core reports a call's end on one of its
 * worker threads: the answer is stored in the call and queued without taking the GIL, and the
 * eventfd is written when the queue was empty. The loop watches the fd (add_reader, or a gevent
 * io watcher) and runs Completions.run(), which calls each call's Python `done` under one GIL
 * take for the whole batch. */
#ifndef RLPY_ASYNC_H
#define RLPY_ASYNC_H

#include <pthread.h>

#include "binding.h"

typedef struct rlpy_call rlpy_call;

typedef struct {
    PyObject_HEAD int fd; /* eventfd; -1 once closed */
    pthread_mutex_t mu;
    rlpy_call *head, *tail; /* ended calls whose `done` has not run */
} rlpy_completions;

typedef enum {
    CALL_ACQUIRE,
    CALL_RELEASE,
    CALL_QUERY,
    CALL_FORCE_UNLOCK,
    CALL_OWNER
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
};

extern PyTypeObject rlpy_completions_type, rlpy_call_type;

/* The core's done callback: queues the call on its Completions (any thread, no GIL). */
void rlpy_call_ended(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud);

/* Readies both types and adds Completions to the module; -1 with an exception set. */
int rlpy_async_add_types(PyObject *module);

#endif
