#include "family_kit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void made(rl_status st, const char *what, const rl_error *err) {
    if (st == RL_OK) return;
    fprintf(stderr, "%s: %s\n", what, err->message);
    exit(2);
}

rl_semaphore *new_semaphore(rl_client *c, const char *name) {
    rl_semaphore *s = NULL;
    rl_error err;
    made(rl_semaphore_new(c, name, strlen(name), &s, &err), "rl_semaphore_new", &err);
    return s;
}

rl_expirable *new_expirable(rl_client *c, const char *name) {
    rl_expirable *s = NULL;
    rl_error err;
    made(rl_expirable_new(c, name, strlen(name), &s, &err), "rl_expirable_new", &err);
    return s;
}

rl_countdown *new_countdown(rl_client *c, const char *name) {
    rl_countdown *l = NULL;
    rl_error err;
    made(rl_countdown_new(c, name, strlen(name), &l, &err), "rl_countdown_new", &err);
    return l;
}

long long subscribers(const char *channel) {
    redisReply *r = raw(g_raw, "PUBSUB NUMSUB %s", channel);
    long long n = r->elements == 2 ? r->element[1]->integer : -1;
    freeReplyObject(r);
    return n;
}

long long redis_epoch_ms(void) {
    redisReply *r = raw(g_raw, "TIME");
    long long ms =
        strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}
