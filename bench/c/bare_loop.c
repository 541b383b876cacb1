/* See bare_loop.h. */
#include "bare_loop.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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

/* One cycle as redlease's with a fixed lease: the same keys, arguments and answers, nothing else
 * (no hold table, no latch DEL, no locking, no argument building beyond one snprintf). Adds the
 * acquire's round trip to *acquire_s. 0, or -1 when an answer is not the expected one. */
static int one_cycle(bl_conn *c, double *acquire_s) {
    const char *name = "bench:bare", *channel = "redisson_lock__channel:{bench:bare}";
    const char *owner = "8c6e5a7e-0000-4000-8000-000000000000:1";
    char latch[96];
    const char *a[] = {"EVALSHA", c->acq, "1", name, "30000", owner};
    const char *r[] = {"EVALSHA", c->rel,  "3",   name,    channel,  latch,
                       "0",       "30000", owner, "20000", "publish"};
    snprintf(latch, sizeof latch, "redisson_unlock_latch:{bench:bare}:%016llx%016lx",
             c->latch_prefix, c->latch_id++);
    double t0 = now_s();
    redisReply *x = command(c, 6, a);
    *acquire_s += now_s() - t0;
    int ok = x && x->type == REDIS_REPLY_NIL;
    freeReplyObject(x);
    if (!ok) return -1; /* not acquired */
    x = command(c, 11, r);
    ok = x && x->type == REDIS_REPLY_INTEGER && x->integer == 1;
    freeReplyObject(x);
    return ok ? 0 : -1; /* or not released */
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

void bl_close(bl_conn *c) {
    if (!c) return;
    if (c->ctx) redisFree(c->ctx);
    free(c);
}
