#include "sentinel_watch.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "platform.h"
#include "threads.h"

#define WATCH_RETRY_MIN_MS 100
#define WATCH_RETRY_MAX_MS 2000

typedef struct watcher {
    rl_sentinel_watch *w;
    int index; /* its sentinel in cfg->endpoint */
    rl_conn conn;
    pthread_t thread;
} watcher;

struct rl_sentinel_watch {
    rl_config *cfg;
    rl_sentinel_watch_hooks hooks;
    pthread_mutex_t mu; /* guards started and the pipes' opening */
    int started;        /* threads running: all of them, or none */
    int starting;       /* a failed start is stopping the threads it made */
    atomic_int stop;
    atomic_int listening; /* watchers subscribed now */
    int wake_pipe[2];     /* poke: a watcher asks again */
    int stop_pipe[2];     /* readable once stopping (never drained): wakes every watcher */
    int n;
    watcher watchers[];
};

rl_target rl_sentinel_target(const rl_config *cfg, int i) {
    const rl_options *o = &cfg->options;
    return (rl_target){.host = cfg->endpoint.sentinel_hosts[i],
                       .port = cfg->endpoint.sentinel_ports[i],
                       .user = o->sentinel_password ? o->sentinel_user : NULL,
                       .password = o->sentinel_password};
}

rl_sentinel_watch *rl_sentinel_watch_new(rl_config *cfg, rl_sentinel_watch_hooks hooks) {
    int n = cfg->endpoint.sentinels;
    rl_sentinel_watch *w = calloc(1, sizeof *w + (size_t)n * sizeof(watcher));
    if (!w) return NULL;
    w->cfg = cfg;
    w->hooks = hooks;
    pthread_mutex_init(&w->mu, NULL);
    atomic_init(&w->stop, 0);
    atomic_init(&w->listening, 0);
    w->wake_pipe[0] = w->wake_pipe[1] = w->stop_pipe[0] = w->stop_pipe[1] = -1;
    w->n = n;
    for (int i = 0; i < n; i++) {
        w->watchers[i].w = w;
        w->watchers[i].index = i;
        rl_conn_init(&w->watchers[i].conn, cfg);
    }
    return w;
}

/* Empties the wake pipe; 1 when this thread took a poke (every watcher polls the pipe, one
 * reads it). */
static int took_poke(rl_sentinel_watch *w) {
    char bytes[64];
    int took = 0;
    while (read(w->wake_pipe[0], bytes, sizeof bytes) > 0)
        took = 1;
    return took;
}

/* A caller found the master doubtful and the sentinels down: ask them again. */
static void answer_poke(rl_sentinel_watch *w) {
    if (took_poke(w)) w->hooks.ask_again(w->hooks.state);
}

static void handle(rl_sentinel_watch *w, const redisReply *r) {
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "message") == 0 &&
        r->element[2]->type == REDIS_REPLY_STRING)
        w->hooks.heard_switch(w->hooks.state, r->element[2]->str);
}

/* Waits for the connection, a poke or the stop: 1 when the connection has something to read, 0
 * after a poke, -1 when stopping or failed. */
static int wait_readable(watcher *me) {
    rl_sentinel_watch *w = me->w;
    struct pollfd fds[3] = {{.fd = me->conn.fd, .events = POLLIN},
                            {.fd = w->stop_pipe[0], .events = POLLIN},
                            {.fd = w->wake_pipe[0], .events = POLLIN}};
    if (poll(fds, 3, -1) < 0) return errno == EINTR ? 0 : -1;
    if (fds[1].revents || atomic_load(&w->stop)) return -1;
    if (fds[2].revents) {
        answer_poke(w);
        return 0;
    }
    return fds[0].revents != 0;
}

/* Subscribed on this watcher's sentinel: reads messages until the connection fails or the
 * watchers stop. */
static void listen_on(watcher *me) {
    rl_sentinel_watch *w = me->w;
    rl_target t = rl_sentinel_target(w->cfg, me->index);
    rl_error err;
    if (rl_conn_open_to(&me->conn, &t, w->cfg->options.command_timeout_ms, &err) != RL_OK) return;
    const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
    size_t lens[2] = {9, 14};
    rl_cmd cmd = {2, argv, lens};
    if (rl_conn_append(&me->conn, &cmd) != 0 || rl_conn_flush(&me->conn) != 0) return;
    /* A switch may have happened while nobody listened: ask again. */
    if (atomic_fetch_add(&w->listening, 1) == 0) w->hooks.ask_again(w->hooks.state);
    while (!atomic_load(&w->stop)) {
        if (rl_conn_buffered(&me->conn) == 0) {
            int readable = wait_readable(me);
            if (readable < 0) break;
            if (readable == 0) continue;
            if (rl_conn_receive(&me->conn, 0) != 0) break;
        }
        redisReply *reply;
        int failed = 0;
        for (;;) {
            if (rl_conn_next_reply(&me->conn, &reply) != 0) {
                failed = 1;
                break;
            }
            if (!reply) break;
            handle(w, reply);
            freeReplyObject(reply);
        }
        if (failed) break;
    }
    atomic_fetch_sub(&w->listening, 1);
}

static void *watcher_main(void *arg) {
    watcher *me = arg;
    rl_sentinel_watch *w = me->w;
    int64_t backoff = WATCH_RETRY_MIN_MS;
    while (!atomic_load(&w->stop)) {
        int64_t started = rl_now_ms();
        listen_on(me);
        rl_conn_close(&me->conn);
        if (rl_now_ms() - started > WATCH_RETRY_MAX_MS) backoff = WATCH_RETRY_MIN_MS;
        struct pollfd p[2] = {{.fd = w->stop_pipe[0], .events = POLLIN},
                              {.fd = w->wake_pipe[0], .events = POLLIN}};
        if (!atomic_load(&w->stop) && poll(p, 2, (int)backoff) > 0 && !p[0].revents && p[1].revents)
            answer_poke(w);
        backoff = backoff * 2 > WATCH_RETRY_MAX_MS ? WATCH_RETRY_MAX_MS : backoff * 2;
    }
    return NULL;
}

static void close_pipes(rl_sentinel_watch *w) {
    for (int i = 0; i < 2; i++) {
        if (w->wake_pipe[i] >= 0) close(w->wake_pipe[i]);
        if (w->stop_pipe[i] >= 0) close(w->stop_pipe[i]);
        w->wake_pipe[i] = w->stop_pipe[i] = -1;
    }
}

int rl_sentinel_watch_start(rl_sentinel_watch *w) {
    pthread_mutex_lock(&w->mu);
    if (w->started || w->starting || atomic_load(&w->stop)) {
        int started = w->started;
        pthread_mutex_unlock(&w->mu);
        return started;
    }
    int n = 0;
    if (rl_plat_pipe(w->wake_pipe) == 0 && rl_plat_pipe(w->stop_pipe) == 0)
        while (n < w->n &&
               rl_thread_start(&w->watchers[n].thread, watcher_main, &w->watchers[n]) == 0)
            n++;
    if (n == w->n) {
        w->started = 1;
        pthread_mutex_unlock(&w->mu);
        return 1;
    }
    /* All or none: those that started stop (joined without the mutex, as a stop is). */
    w->starting = 1;
    atomic_store(&w->stop, 1);
    if (w->stop_pipe[1] >= 0) {
        rl_plat_pipe_poke(w->stop_pipe[1]);
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < n; i++) {
        rl_conn_interrupt(&w->watchers[i].conn);
        pthread_join(w->watchers[i].thread, NULL);
    }
    pthread_mutex_lock(&w->mu);
    close_pipes(w);
    w->starting = 0;
    atomic_store(&w->stop, 0);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int rl_sentinel_watch_started(rl_sentinel_watch *w) {
    pthread_mutex_lock(&w->mu);
    int started = w->started;
    pthread_mutex_unlock(&w->mu);
    return started;
}

void rl_sentinel_watch_poke(rl_sentinel_watch *w) {
    pthread_mutex_lock(&w->mu);
    if (w->started) {
        rl_plat_pipe_poke(w->wake_pipe[1]);
    }
    pthread_mutex_unlock(&w->mu);
}

void rl_sentinel_watch_stop(rl_sentinel_watch *w) {
    atomic_store(&w->stop, 1);
    pthread_mutex_lock(&w->mu);
    int started = w->started;
    w->started = 0;
    if (started) {
        rl_plat_pipe_poke(w->stop_pipe[1]);
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n; i++)
        rl_conn_interrupt(&w->watchers[i].conn);
    if (!started) return;
    for (int i = 0; i < w->n; i++)
        pthread_join(w->watchers[i].thread, NULL);
    pthread_mutex_lock(&w->mu);
    close_pipes(w);
    pthread_mutex_unlock(&w->mu);
}

void rl_sentinel_watch_free(rl_sentinel_watch *w) {
    if (!w) return;
    rl_sentinel_watch_stop(w);
    for (int i = 0; i < w->n; i++)
        rl_conn_close(&w->watchers[i].conn);
    close_pipes(w);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void rl_sentinel_watch_forget_after_fork(rl_sentinel_watch *w) {
    pthread_mutex_init(&w->mu, NULL); /* a parent's thread may have held it */
    w->starting = 0;
    atomic_store(&w->stop, 0);
    for (int i = 0; i < w->n; i++)
        rl_conn_abandon(&w->watchers[i].conn);
    close_pipes(w);
    w->started = 0;
    atomic_store(&w->listening, 0);
}
