/* redlease._core.Completions: the queue of ended async calls and the descriptor a loop watches
 * (see async.h). */
#include "async.h" /* first: Python.h before any system header */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/eventfd.h>
#endif

/* The wake-up: an eventfd on Linux (one descriptor, one counter); elsewhere (macOS) a pipe, whose
 * read end the loop watches and whose write end the core's threads write. */
static int wake_open(rlpy_completions *q) {
#ifdef __linux__
    q->fd = q->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return q->fd < 0 ? -1 : 0;
#else
    int fds[2];
    if (pipe(fds) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFL);
        if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) != 0 ||
            fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
            int e = errno;
            close(fds[0]);
            close(fds[1]);
            errno = e;
            return -1;
        }
    }
    q->fd = fds[0], q->wake = fds[1];
    return 0;
#endif
}

static void wake_close(rlpy_completions *q) {
    if (q->wake >= 0 && q->wake != q->fd) close(q->wake);
    if (q->fd >= 0) close(q->fd);
    q->fd = q->wake = -1;
}

/* Empties the wake-up so the loop sees it readable again only after the next write: 0, or -1
 * with errno. */
static int wake_drain(rlpy_completions *q) {
    uint64_t buf[8]; /* an eventfd's counter is one uint64_t; a pipe may hold several writes */
    for (;;) {
        ssize_t n = read(q->fd, buf, q->fd == q->wake ? sizeof buf[0] : sizeof buf);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (q->fd == q->wake || n < (ssize_t)sizeof buf) return 0;
    }
}

void rlpy_call_ended(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud) {
    (void)call;
    rlpy_call *self = ud;
    rlpy_completions *q = self->completions;
    self->status = st;
    self->value = value;
    if (err) self->err = *err;
    self->next = NULL;
    pthread_mutex_lock(&q->mu);
    int was_empty = q->head == NULL;
    if (q->tail)
        q->tail->next = self;
    else
        q->head = self;
    q->tail = self;
    int fd = q->wake;
    pthread_mutex_unlock(&q->mu);
    if (was_empty && fd >= 0) {
        uint64_t one = 1;
        ssize_t rc = write(fd, &one, sizeof one); /* a full counter or pipe is woken already */
        (void)rc;
    }
}

static PyObject *completions_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (!PyArg_ParseTuple(args, ":Completions") || (kwargs && PyDict_Size(kwargs) > 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Completions() takes no arguments");
        return NULL;
    }
    rlpy_completions *self = (rlpy_completions *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (wake_open(self) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        type->tp_free((PyObject *)self);
        return NULL;
    }
    pthread_mutex_init(&self->mu, NULL);
    return (PyObject *)self;
}

static void completions_dealloc(rlpy_completions *self) {
    /* Calls in the core keep their Completions alive: none is pending here. */
    wake_close(self);
    pthread_mutex_destroy(&self->mu);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The Python answer of an ended call: (value, error). */
static int answer(rlpy_call *c, PyObject **value, PyObject **error) {
    *value = NULL;
    *error = NULL;
    if (c->status == RL_OK) {
        switch (c->kind) {
        case CALL_ACQUIRE:
            *value = Py_NewRef(Py_True);
            break;
        case CALL_QUERY:
            *value = PyLong_FromLongLong(c->value);
            break;
        case CALL_FORCE_UNLOCK:
            *value = PyBool_FromLong(c->value != 0);
            break;
        case CALL_OWNER: {
            rl_inspection *in = rl_call_inspection(c->call);
            *value = in ? rlpy_owner_objects(in) : PyList_New(0);
            rl_inspection_free(in);
            if (!*value) { /* as a failed call: the error to the awaiting task */
                PyObject *type, *tb;
                PyErr_Fetch(&type, error, &tb);
                PyErr_NormalizeException(&type, error, &tb);
                Py_XDECREF(type);
                Py_XDECREF(tb);
                *value = Py_NewRef(Py_None);
            }
            break;
        }
        case CALL_WAIT:
            *value = Py_NewRef(Py_True);
            break;
        case CALL_PERMIT:
            *value = PyUnicode_FromStringAndSize(c->id, RL_PERMIT_ID_LEN);
            break;
        case CALL_RUN:
            *value = rlpy_run_answer(c);
            break;
        default:
            *value = Py_NewRef(Py_None);
        }
    } else if (c->status == RL_NOT_ACQUIRED && c->kind == CALL_ACQUIRE) {
        *value = Py_NewRef(Py_False);
    } else if (c->status == RL_ABORTED &&
               (c->kind == CALL_ACQUIRE || c->kind == CALL_WAIT || c->kind == CALL_PERMIT)) {
        *value = Py_NewRef(Py_None); /* cancelled: nothing held */
    } else {
        PyObject *type, *tb;
        rlpy_raise_for(&c->err, "task");
        PyErr_Fetch(&type, error, &tb);
        PyErr_NormalizeException(&type, error, &tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        *value = Py_NewRef(Py_None);
    }
    if (!*error) *error = Py_NewRef(Py_None);
    return *value && *error ? 0 : -1;
}

static PyObject *completions_run(rlpy_completions *self, PyObject *unused) {
    (void)unused;
    if (self->fd >= 0 && wake_drain(self) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    pthread_mutex_lock(&self->mu);
    rlpy_call *c = self->head;
    self->head = self->tail = NULL;
    pthread_mutex_unlock(&self->mu);
    long n = 0;
    while (c) {
        rlpy_call *next = c->next;
        PyObject *value, *error;
        if (answer(c, &value, &error) < 0) {
            PyErr_WriteUnraisable((PyObject *)c);
        } else {
            PyObject *r = PyObject_CallFunctionObjArgs(c->done, value, error, NULL);
            if (!r) PyErr_WriteUnraisable(c->done); /* the loop goes on with the others */
            Py_XDECREF(r);
        }
        Py_XDECREF(value);
        Py_XDECREF(error);
        Py_DECREF(c); /* the core's reference, taken when the call started */
        c = next;
        n++;
    }
    return PyLong_FromLong(n);
}

/* Waits, without the GIL, until ended calls are queued, the loop's own descriptor (`loop_fd`, its
 * selector's) is readable, or `seconds` pass (rounded up to a millisecond, as asyncio rounds its
 * selector's waits); runs the queued calls as run() does when they came first. A signal ends the
 * wait too: its handler runs in the Python code that follows. */
static PyObject *completions_wait(rlpy_completions *self, PyObject *args) {
    int loop_fd;
    double seconds;
    if (!PyArg_ParseTuple(args, "id:wait", &loop_fd, &seconds)) return NULL;
    if (self->fd < 0 || loop_fd < 0 || !(seconds > 0)) return PyLong_FromLong(0);
    int ms = seconds >= 60.0 ? 60000 : (int)(seconds * 1e3);
    if (ms < seconds * 1e3) ms++; /* rounded up */
    struct pollfd fds[2] = {{.fd = self->fd, .events = POLLIN}, {.fd = loop_fd, .events = POLLIN}};
    int rc;
    RLPY_UNLOCKED(rc = poll(fds, 2, ms));
    if (rc <= 0 || !(fds[0].revents & POLLIN)) return PyLong_FromLong(0);
    return completions_run(self, NULL);
}

static PyObject *completions_fileno(rlpy_completions *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(self->fd);
}

static PyObject *completions_new_context(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromUnsignedLongLong(rl_context_new());
}

static PyObject *completions_context_ended(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *client;
    unsigned long long context;
    if (!PyArg_ParseTuple(args, "OK:context_ended", &client, &context)) return NULL;
    rl_client *core = rlpy_open_client(client);
    if (!core) {
        PyErr_Clear(); /* a closed client renews nothing any more */
        Py_RETURN_NONE;
    }
    rl_client_context_ended_later(core, context);
    Py_RETURN_NONE;
}

/* Starting calls: async_calls.c. */
PyObject *rlpy_start_acquire(rlpy_completions *self, PyObject *args, PyObject *kwargs);
PyObject *rlpy_start_release(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_query(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_force_unlock(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_owner(rlpy_completions *self, PyObject *args);
PyObject *rlpy_local_state(PyObject *self, PyObject *args);
/* The family's calls: family_calls.c. */
PyObject *rlpy_start_semaphore_acquire(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_permit_acquire(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_latch_wait(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_family(rlpy_completions *self, PyObject *args);
PyObject *rlpy_start_multilock_acquire(rlpy_completions *self, PyObject *args, PyObject *kwargs);
PyObject *rlpy_start_multilock_release(rlpy_completions *self, PyObject *args);

static PyMethodDef completions_methods[] = {
    {"fileno", (PyCFunction)completions_fileno, METH_NOARGS,
     "fileno() -> int\n--\n\nThe descriptor to watch: readable when ended calls wait in the "
     "queue."},
    {"run", (PyCFunction)completions_run, METH_NOARGS,
     "run() -> int\n--\n\nCalls done(value, error) of every ended call, in order; how many."},
    {"wait", (PyCFunction)completions_wait, METH_VARARGS,
     "wait(loop_fd, seconds, /) -> int\n--\n\nWaits for ended calls, or for loop_fd to be "
     "readable, at most seconds (up to 60 s); runs the ended calls as run() does; how many."},
    {"new_context", completions_new_context, METH_NOARGS,
     "new_context() -> int\n--\n\nA fresh owner context id (one per task or greenlet)."},
    {"context_ended", completions_context_ended, METH_VARARGS,
     "context_ended(client, context) -> None\n--\n\nReleases, on the client's workers, what the "
     "ended context still holds (reported as abandoned)."},
    {"acquire", (PyCFunction)(void (*)(void))rlpy_start_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(lock, context, timeout, lease, done, max_hold=...) -> Call\n--\n\n"
     "Starts an acquire; done(True|False|None, error) runs from run() (None: cancelled)."},
    {"release", (PyCFunction)rlpy_start_release, METH_VARARGS,
     "release(lock, context, done) -> Call\n--\n\nStarts a release; done(None, error)."},
    {"query", (PyCFunction)rlpy_start_query, METH_VARARGS,
     "query(lock, what, context, done) -> Call\n--\n\nStarts a query (1 locked, 2 held, 3 hold "
     "count, 4 remaining ms); done(int, error)."},
    {"force_unlock", (PyCFunction)rlpy_start_force_unlock, METH_VARARGS,
     "force_unlock(lock, done) -> Call\n--\n\nStarts a force unlock; done(bool, error)."},
    {"owner", (PyCFunction)rlpy_start_owner, METH_VARARGS,
     "owner(lock, done) -> Call\n--\n\nStarts reading the lock's owners; done(list[Owner], "
     "error)."},
    {"semaphore_acquire", (PyCFunction)rlpy_start_semaphore_acquire, METH_VARARGS,
     "semaphore_acquire(sem, permits, timeout, done, /) -> Call\n--\n\nStarts a Semaphore's "
     "acquire; done(True, None), or (None, LockTimeout) not in time, (None, None) cancelled."},
    {"permit_acquire", (PyCFunction)rlpy_start_permit_acquire, METH_VARARGS,
     "permit_acquire(sem, lease, timeout, done, /) -> Call\n--\n\nStarts a "
     "PermitExpirableSemaphore's acquire; done(permit id, None), else as semaphore_acquire."},
    {"latch_wait", (PyCFunction)rlpy_start_latch_wait, METH_VARARGS,
     "latch_wait(latch, timeout, done, /) -> Call\n--\n\nStarts a CountDownLatch's wait; "
     "done as semaphore_acquire's."},
    {"family", (PyCFunction)rlpy_start_family, METH_VARARGS,
     "family(obj, op, done, a=0, b=None, /) -> Call\n--\n\nStarts one of the family's calls "
     "of one round trip (op: a FAMILY_* constant); done(its answer, error)."},
    {"multilock_acquire", (PyCFunction)(void (*)(void))rlpy_start_multilock_acquire,
     METH_VARARGS | METH_KEYWORDS,
     "multilock_acquire(multi, context, timeout, lease, done, max_hold=...) -> Call\n--\n\n"
     "Starts a MultiLock's acquire; done as acquire's."},
    {"multilock_release", (PyCFunction)rlpy_start_multilock_release, METH_VARARGS,
     "multilock_release(multi, context, done, /) -> Call\n--\n\nStarts a MultiLock's "
     "release; done(None, error)."},
    {"local_state", rlpy_local_state, METH_VARARGS,
     "local_state(lock, context, /) -> tuple\n--\n\n(holds, lost reason or None, token): what this "
     "client knows of the context's hold, without a round trip."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject rlpy_completions_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "redlease._core.Completions",
    .tp_doc = "The bridge from the core's async calls to one event loop (see redlease.asyncio).",
    .tp_basicsize = sizeof(rlpy_completions),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = completions_new,
    .tp_dealloc = (destructor)completions_dealloc,
    .tp_methods = completions_methods,
};
