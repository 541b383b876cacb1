/* See bare_loop.h. */
#include "bare_loop.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redlease.h"

struct bl_conn {
    redisContext *ctx;
    char acq[41], rel[41];
    unsigned long long latch_prefix; /* random per connection: no two processes share ids */
    long latch_id;                   /* a new request id per release, as redlease does */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static redisReply *command(bl_conn *c, int argc, const char **argv) {
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, NULL);
    if (r && r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "bare_loop: %s\n", r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* The text of the core's script `name` (the same bytes redlease sends). */
static const char *script(const char *name) {
    for (int i = 0; rl_script_name(i); i++)
        if (strcmp(rl_script_name(i), name) == 0) return rl_script_source(i);
    return NULL;
}

static int load(bl_conn *c, const char *name, char sha[41]) {
    const char *text = script(name);
    if (!text) return -1;
    const char *argv[] = {"SCRIPT", "LOAD", text};
    redisReply *r = command(c, 3, argv);
    if (!r || r->type != REDIS_REPLY_STRING) return -1;
    snprintf(sha, 41, "%s", r->str);
    freeReplyObject(r);
    return 0;
}

bl_conn *bl_open(const char *url) {
    if (strncmp(url, "redis://", 8) != 0) return NULL;
    char host[128];
    const char *h = url + 8, *colon = strchr(h, ':');
    if (!colon) return NULL;
    snprintf(host, sizeof host, "%.*s", (int)(colon - h), h);
    bl_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = redisConnect(host, atoi(colon + 1));
    if (getrandom(&c->latch_prefix, sizeof c->latch_prefix, 0) != sizeof c->latch_prefix)
        c->latch_prefix = (unsigned long long)time(NULL) ^ (unsigned long long)(size_t)c;
    if (!c->ctx || c->ctx->err || load(c, "acquire", c->acq) != 0 ||
        load(c, "release", c->rel) != 0) {
        bl_close(c);
        return NULL;
    }
    return c;
}

double bl_ping(bl_conn *c, int n) {
    const char *argv[] = {"PING"};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        redisReply *r = command(c, 1, argv);
        if (!r) return -1;
        freeReplyObject(r);
    }
    return n / (now_s() - t0);
}

static const char *const NAME = "bench:bare";
static const char *const CHANNEL = "redisson_lock__channel:{bench:bare}";

/* The acquire of `owner`, as redlease sends it: 0 when granted. */
static int acquire(bl_conn *c, const char *owner) {
    const char *a[] = {"EVALSHA", c->acq, "1", NAME, "30000", owner};
    redisReply *x = command(c, 6, a);
    int ok = x && x->type == REDIS_REPLY_NIL;
    freeReplyObject(x);
    return ok ? 0 : -1;
}

/* Appends the release of `owner` (a fresh latch each time, as redlease does) to c's output
 * buffer; argv's strings are copied there, so the latch may live on the stack. */
static void append_release(bl_conn *c, const char *owner) {
    char latch[96];
    const char *r[] = {"EVALSHA", c->rel,  "3",   NAME,    CHANNEL,  latch,
                       "0",       "30000", owner, "20000", "publish"};
    snprintf(latch, sizeof latch, "redisson_unlock_latch:{bench:bare}:%016llx%016lx",
             c->latch_prefix, c->latch_id++);
    redisAppendCommandArgv(c->ctx, 11, r, NULL);
}

/* The answer of a release appended before: 0 when it released (1, or 2 when its message
 * reached a subscriber). */
static int released(bl_conn *c) {
    redisReply *x = NULL;
    int ok = redisGetReply(c->ctx, (void **)&x) == REDIS_OK && x &&
             x->type == REDIS_REPLY_INTEGER && (x->integer == 1 || x->integer == 2);
    freeReplyObject(x);
    return ok ? 0 : -1;
}

/* One cycle as redlease's with a fixed lease: the same keys, arguments and answers, nothing else
 * (no hold table, no latch DEL, no locking, no argument building beyond one snprintf). Adds the
 * acquire's round trip to *acquire_s. 0, or -1 when an answer is not the expected one. */
static int one_cycle(bl_conn *c, double *acquire_s) {
    const char *owner = "8c6e5a7e-0000-4000-8000-000000000000:1";
    double t0 = now_s();
    int ok = acquire(c, owner) == 0;
    *acquire_s += now_s() - t0;
    if (!ok) return -1; /* not acquired */
    append_release(c, owner);
    return released(c); /* or not released */
}

double bl_scripts(bl_conn *c, int n) {
    double acquire_s = 0, t0 = now_s();
    for (int i = 0; i < n; i++)
        if (one_cycle(c, &acquire_s) != 0) return -1;
    return n / (now_s() - t0);
}

double bl_acquire(bl_conn *c, int n) {
    double acquire_s = 0;
    for (int i = 0; i < n; i++)
        if (one_cycle(c, &acquire_s) != 0) return -1;
    return n / acquire_s;
}

const char *bl_sha(bl_conn *c, int release) {
    return release ? c->rel : c->acq;
}

/* Sends what c's output buffer holds, without reading. */
static int flush(bl_conn *c) {
    int done = 0;
    while (!done)
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK) return -1;
    return 0;
}

/* Reads replies on the subscribed connection until a message on CHANNEL. */
static int await_message(redisContext *sub) {
    for (;;) {
        redisReply *x = NULL;
        if (redisGetReply(sub, (void **)&x) != REDIS_OK || !x) return -1;
        int message = x->type == REDIS_REPLY_ARRAY && x->elements == 3 &&
                      x->element[0]->type == REDIS_REPLY_STRING &&
                      strcmp(x->element[0]->str, "message") == 0;
        freeReplyObject(x);
        if (message) return 0;
    }
}

int bl_handoff(const char *url, int n, double *ms) {
    const char *owners[2] = {"8c6e5a7e-0000-4000-8000-000000000000:1",
                             "8c6e5a7e-0000-4000-8000-000000000000:2"};
    bl_conn *h[2] = {bl_open(url), bl_open(url)}, *s = bl_open(url);
    int rc = -1;
    if (!h[0] || !h[1] || !s) goto out;
    const char *sub[] = {"SUBSCRIBE", CHANNEL};
    redisReply *x = command(s, 2, sub); /* the confirmation */
    if (!x) goto out;
    freeReplyObject(x);
    if (acquire(h[0], owners[0]) != 0) goto out;
    for (int i = 0; i < n; i++) {
        bl_conn *from = h[i % 2], *to = h[(i + 1) % 2];
        append_release(from, owners[i % 2]);
        double t0 = now_s();
        if (flush(from) != 0 || await_message(s->ctx) != 0 || acquire(to, owners[(i + 1) % 2]) != 0)
            goto out;
        ms[i] = (now_s() - t0) * 1e3;
        if (released(from) != 0) goto out;
    }
    append_release(h[n % 2], owners[n % 2]);
    rc = flush(h[n % 2]) == 0 && released(h[n % 2]) == 0 ? 0 : -1;
out:
    bl_close(h[0]);
    bl_close(h[1]);
    bl_close(s);
    return rc;
}

/* The waiter of bl_handoff_apart, in the child: subscribed, it writes 0 to `out` (ready), then
 * waits for the release's message, acquires, notes the time, releases (and reads its own
 * release's message), and writes the time to `out`, round after round until killed; a failure
 * writes -1 and ends it. */
static void waiter_process(const char *url, int out) {
    const char *owner = "8c6e5a7e-0000-4000-8000-000000000000:2";
    bl_conn *w = bl_open(url), *s = bl_open(url);
    const char *sub[] = {"SUBSCRIBE", CHANNEL};
    redisReply *x = w && s ? command(s, 2, sub) : NULL;
    double t = x ? 0 : -1;
    freeReplyObject(x);
    if (write(out, &t, sizeof t) != sizeof t) t = -1;
    while (t == 0) {
        double held = -1;
        if (await_message(s->ctx) == 0 && acquire(w, owner) == 0) {
            held = now_s();
            append_release(w, owner);
            if (flush(w) != 0 || released(w) != 0 || await_message(s->ctx) != 0) held = -1;
        }
        if (write(out, &held, sizeof held) != sizeof held || held < 0) break;
    }
    _exit(0);
}

int bl_handoff_apart(const char *url, int n, double settle_ms, double *ms) {
    const char *owner = "8c6e5a7e-0000-4000-8000-000000000000:1";
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t child = fork();
    if (child == 0) waiter_process(url, fds[1]);
    close(fds[1]);
    bl_conn *h = child > 0 ? bl_open(url) : NULL;
    double t = -1;
    int rc = -1;
    if (!h || read(fds[0], &t, sizeof t) != sizeof t || t != 0) goto out;
    long settle_ns = (long)(settle_ms * 1e6);
    struct timespec settle = {.tv_sec = settle_ns / 1000000000L,
                              .tv_nsec = settle_ns % 1000000000L};
    for (int i = 0; i < n; i++) {
        if (acquire(h, owner) != 0) goto out;
        nanosleep(&settle, NULL); /* the waiter sleeps in its read by then */
        append_release(h, owner);
        double t0 = now_s(), held;
        if (flush(h) != 0 || released(h) != 0 || read(fds[0], &held, sizeof held) != sizeof held ||
            held < 0)
            goto out;
        ms[i] = (held - t0) * 1e3;
    }
    rc = 0;
out:
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    close(fds[0]);
    bl_close(h);
    return rc;
}

void bl_close(bl_conn *c) {
    if (!c) return;
    if (c->ctx) redisFree(c->ctx);
    free(c);
}
