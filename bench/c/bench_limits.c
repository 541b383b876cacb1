/* The limits beside measure 1: what one connection can do with nothing of redlease around it.
 *   - PING round trips per second (a cycle costs at least two round trips);
 *   - redlease's own acquire and release scripts (texts taken from the core, rl_script_text),
 *     issued back to back by a bare hiredis loop: EVALSHA acquire, EVALSHA release, per cycle.
 * Prints one JSON object. Usage: bench_limits REDIS_URL [cycles] */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scripts.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_limits: %s\n", what);
    exit(1);
}

static redisContext *connect_url(const char *url) {
    if (strncmp(url, "redis://", 8) != 0) die("only redis://host:port URLs");
    char host[128];
    const char *h = url + 8, *colon = strchr(h, ':');
    if (!colon) die("the URL needs a port");
    snprintf(host, sizeof host, "%.*s", (int)(colon - h), h);
    redisContext *c = redisConnect(host, atoi(colon + 1));
    if (!c || c->err) die("cannot connect");
    return c;
}

static redisReply *command(redisContext *c, int argc, const char **argv) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) die("connection lost");
    if (r->type == REDIS_REPLY_ERROR) die(r->str);
    return r;
}

static void load(redisContext *c, rl_script_id id, char sha[41]) {
    const char *argv[] = {"SCRIPT", "LOAD", rl_script_text(id)};
    redisReply *r = command(c, 3, argv);
    snprintf(sha, 41, "%s", r->str);
    freeReplyObject(r);
}

static double ping_rate(redisContext *c, int n) {
    const char *argv[] = {"PING"};
    double t0 = now_s();
    for (int i = 0; i < n; i++) freeReplyObject(command(c, 1, argv));
    return n / (now_s() - t0);
}

/* As a redlease cycle with a fixed lease: the same keys, arguments and answers, nothing else (no
 * hold table, no latch DEL, no locking, no argument building beyond one snprintf). */
static double script_rate(redisContext *c, int n, const char *acq, const char *rel) {
    const char *name = "bench:bare", *channel = "redisson_lock__channel:{bench:bare}";
    const char *owner = "8c6e5a7e-0000-4000-8000-000000000000:1";
    static long latch_id; /* a new request id per release, as redlease does */
    char latch[96];
    const char *a[] = {"EVALSHA", acq, "1", name, "30000", owner};
    const char *r[] = {"EVALSHA", rel, "3", name, channel, latch, "0", "30000", owner, "20000",
                       "publish"};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        snprintf(latch, sizeof latch, "redisson_unlock_latch:{bench:bare}:%032ld", latch_id++);
        redisReply *x = command(c, 6, a);
        if (x->type != REDIS_REPLY_NIL) die("acquire: not acquired");
        freeReplyObject(x);
        x = command(c, 11, r);
        if (x->type != REDIS_REPLY_INTEGER || x->integer != 1) die("release: not released");
        freeReplyObject(x);
    }
    return n / (now_s() - t0);
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    if (!url || n <= 0) die("usage: bench_limits REDIS_URL [cycles]");
    redisContext *c = connect_url(url);
    char acq[41], rel[41];
    load(c, RL_SCRIPT_ACQUIRE, acq);
    load(c, RL_SCRIPT_RELEASE, rel);
    ping_rate(c, n / 10 + 1); /* warm up */
    script_rate(c, n / 10 + 1, acq, rel);
    double ping = ping_rate(c, n);
    double scripts = script_rate(c, n, acq, rel);
    printf("{\"measure\": \"limits\", \"cycles\": %d, \"acquire_sha\": \"%s\", "
           "\"release_sha\": \"%s\", \"rows\": [\n"
           "  {\"impl\": \"ping\", \"label\": \"two PING round trips (hiredis)\", "
           "\"ping_per_s\": %.1f, \"cycles_per_s\": %.1f},\n"
           "  {\"impl\": \"bare-scripts\", \"label\": \"acquire + release scripts, bare hiredis "
           "loop\", \"cycles_per_s\": %.1f}\n]}\n",
           n, acq, rel, ping, ping / 2, scripts);
    const char *flush[] = {"DEL", "bench:bare"};
    freeReplyObject(command(c, 2, flush));
    redisFree(c);
    return 0;
}
