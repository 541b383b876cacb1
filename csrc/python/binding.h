/* redlease._core: the CPython binding's shared declarations. The binding converts arguments,
 * releases the GIL around every core call that may wait, and maps core statuses to the
 * exceptions of redlease._errors. All lock logic is in the core. */
#ifndef RLPY_BINDING_H
#define RLPY_BINDING_H

/* Every binding file includes this (or async.h) before any system header, as CPython asks:
 * pyconfig.h sets _POSIX_C_SOURCE and _XOPEN_SOURCE, and a system header included first has
 * glibc 2.41 and newer define other values, a redefinition (-Werror) in a strict build. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "compat.h" /* CPython 3.9 */
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

/* The owner context of the caller: the OS thread's, or under gevent the greenlet's (green.c). */
uint64_t rlpy_owner_context(void);
/* Under gevent (green.c): a lock acquire that may wait is waited for on the hub. */
int rlpy_green_active(void);
int rlpy_green_acquire(PyObject *lock, uint64_t context, int64_t lease_ms, int64_t wait_ms,
                       int64_t max_hold_ms); /* 1 acquired, 0 not, -1 exception set */
PyObject *rlpy_set_green(PyObject *module, PyObject *args);

/* Runs `call` (a core call that may wait on the network) with the GIL released. */
#define RLPY_UNLOCKED(call)                                                                        \
    do {                                                                                           \
        PyThreadState *rlpy_saved_ = PyEval_SaveThread();                                          \
        call;                                                                                      \
        PyEval_RestoreThread(rlpy_saved_);                                                         \
    } while (0)

/* Called by the sync API's blocking calls: -1 with RuntimeError set when the calling thread runs
 * an asyncio event loop (the owner would be the thread, shared by every task on it), naming
 * `instead`, redlease.asyncio's call. */
int rlpy_refuse_on_event_loop(const char *what, const char *instead);
/* For what the client owns (semaphore permits, latches): no owner is at stake, only the wait;
 * -1 with RuntimeError set (naming `instead`, redlease.asyncio's call) when the calling thread
 * runs an asyncio event loop and the call may wait. */
int rlpy_refuse_loop_wait(const char *what, int64_t wait_ms, const char *instead);
/* For the family's waits (semaphores, latches, multi-locks): -1 with RuntimeError set when
 * gevent is active and the call may wait (it would block every greenlet of the thread). */
int rlpy_refuse_green_wait(const char *what, int64_t wait_ms);

/* Sets the Python exception for a failed core call and returns NULL. */
PyObject *rlpy_raise(const rl_error *err);
/* As rlpy_raise, naming the owner of a hold as the host does ("thread", "task"; under gevent
 * "greenlet") in a NotOwnedError. */
PyObject *rlpy_raise_for(const rl_error *err, const char *owner);
/* The exception class redlease._errors defines for a status (borrowed reference). */
PyObject *rlpy_error_class(rl_status status);

/* Seconds (int or float) to milliseconds, rounded up so a positive value never becomes 0.
 * -1 means "forever" for timeouts; None means "watchdog" for leases. 0 on success, -1 with a
 * TypeError/ValueError set. */
int rlpy_timeout_ms(PyObject *value, const char *what, int64_t *out);
int rlpy_lease_ms(PyObject *value, int64_t *out);
int rlpy_positive_ms(PyObject *value, const char *what, int64_t *out);
/* acquire(blocking=True, timeout=, lease=, *, max_hold=) of a lock or multi-lock: the arguments
 * given replace the defaults the outs hold; blocking=False is one try (a timeout then is a
 * ValueError). 0, or -1 with an exception set. */
int rlpy_acquire_args(PyObject *args, PyObject *kwargs, int64_t *wait_ms, int64_t *lease_ms,
                      int64_t *max_hold_ms);
/* As rlpy_positive_ms, and 0 is allowed. */
int rlpy_nonnegative_ms(PyObject *value, const char *what, int64_t *out);
/* None -> RL_MAX_HOLD_NONE (no cap), else seconds > 0. */
int rlpy_max_hold_ms(PyObject *value, int64_t *out);

/* The options in `kwargs` (keywords named as the core's catalogue names them; None: the default)
 * into `o`; `keep` (a list) takes the strings `o` points to. 0, or -1 with TypeError/ValueError
 * naming the option (`fname`: the callable, for an unknown keyword). */
int rlpy_read_options(PyObject *kwargs, rl_options *o, PyObject *keep, const char *fname);

/* Closes the core client with the GIL released; safe from the event thread too. */
void rlpy_client_close(rlpy_client *self);

int rlpy_is_finalizing(void);

/* ---- the lock family beyond locks (semaphore.c, expirable.c, countdown.c, multilock.c) ---- */

/* A wait with the GIL released that still hears Ctrl-C (as Lock.acquire's): pass rlpy_wait_hook
 * and the state to the core call, made inside RLPY_WAITING. */
typedef struct rlpy_wait {
    PyThreadState *thread_state; /* saved while the GIL is released */
    rl_wait_hook hook;           /* rlpy_wait_hook in the main thread, else NULL */
} rlpy_wait;
/* Readies w for a wait of wait_ms: the hook only where Python runs signal handlers (the main
 * thread); a wait of another thread then sleeps until something changes, never waking every
 * slice for nothing. 0, or -1 with an exception set. */
int rlpy_wait_start(rlpy_wait *w, int64_t wait_ms);
int rlpy_wait_hook(void *userdata);
#define RLPY_WAITING(wait, call)                                                                   \
    do {                                                                                           \
        (wait)->thread_state = PyEval_SaveThread();                                                \
        call;                                                                                      \
        PyEval_RestoreThread((wait)->thread_state);                                                \
    } while (0)

/* A name argument (str, as UTF-8, or bytes); -1 with TypeError set. */
int rlpy_name_bytes(PyObject *name, const char **bytes, Py_ssize_t *len);
/* The core client of a redlease._core.Client, or NULL with ClientClosedError set. */
rl_client *rlpy_open_client(PyObject *client);

/* What the family's types made from (client, name) keep besides their core object. */
typedef struct {
    PyObject *client; /* the redlease._core.Client, kept alive while the object is */
    PyObject *name;
} rlpy_named;
/* __init__ once (client, name) are parsed: refuses a second __init__ (`made`: the core object
 * exists), and gives the name's bytes and the client's open core. 0, or -1 with an exception. */
int rlpy_named_open(const char *type, int made, PyObject *client, PyObject *name, rl_client **core,
                    const char **bytes, size_t *len);
/* The same for a type whose __init__ takes (client, name) and nothing else: parses them too. */
int rlpy_named_parse(PyObject *args, PyObject *kwargs, const char *type, int made,
                     PyObject **client, PyObject **name, rl_client **core, const char **bytes,
                     size_t *len);
/* __init__'s end, `st` the core constructor's: keeps client and name in `named` (0), or raises
 * `err` (-1). */
int rlpy_named_made(rlpy_named *named, PyObject *client, PyObject *name, rl_status st,
                    const rl_error *err);
/* tp_dealloc's end, once the core object is freed. */
void rlpy_named_dealloc(PyObject *self, rlpy_named *named);
/* 1 when __init__ made the core object, else 0 with RuntimeError naming `type`. */
int rlpy_named_ready(int made, const char *type);
/* The core lock of a redlease.Lock (any kind), or NULL with TypeError set. */
rl_lock *rlpy_lock_core(PyObject *lock);
/* The same for the family's objects, and (client not NULL) their open core client, else NULL
 * with ClientClosedError set. */
rl_semaphore *rlpy_semaphore_core(PyObject *sem, rl_client **client);
rl_expirable *rlpy_expirable_core(PyObject *sem, rl_client **client);
rl_countdown *rlpy_countdown_core(PyObject *latch, rl_client **client);
rl_multilock *rlpy_multilock_core(PyObject *multi);

/* ---- operating (ops.c): inspection, scan, watch; fixed-lease and hand-off lock methods ---- */
PyObject *rlpy_client_inspect(PyObject *client, PyObject *name);
PyObject *rlpy_client_scan(PyObject *client, PyObject *args);
PyObject *rlpy_client_watch_wait(PyObject *client, PyObject *args);
PyObject *rlpy_lock_extend(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *rlpy_lock_reacquire(PyObject *self, PyObject *unused);
PyObject *rlpy_lock_hand_off(PyObject *self, PyObject *unused);
PyObject *rlpy_lock_release_token(PyObject *self, PyObject *token);
PyObject *rlpy_lock_owners(PyObject *self, rl_client *client, PyObject *name);
/* redlease.Owner objects of an inspection's owners; NULL with the exception set. */
PyObject *rlpy_owner_objects(const rl_inspection *in);

/* ---- fencing (fencing.c): writes that Redis-stored data fences, the counter's cleanup ---- */
PyObject *rlpy_client_fenced_set(PyObject *client, PyObject *args);
PyObject *rlpy_client_fence_drop(PyObject *client, PyObject *name);

extern PyTypeObject rlpy_semaphore_type, rlpy_expirable_type, rlpy_countdown_type,
    rlpy_multilock_type;
/* Readies the family's types and adds them to the module; -1 with an exception set. */
int rlpy_family_add_types(PyObject *module);

#endif
