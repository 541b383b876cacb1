#include "async_kit.h"

#include <stdio.h>
#include <string.h>

void outcome_init(outcome *o) {
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->done_cond, NULL);
}

void outcome_destroy(outcome *o) {
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->done_cond);
}

void record(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud) {
    (void)call;
    outcome *o = ud;
    pthread_mutex_lock(&o->mu);
    o->status = st;
    o->value = value;
    o->at = now_ms();
    snprintf(o->message, sizeof o->message, "%s", err ? err->message : "");
    o->done++;
    pthread_cond_broadcast(&o->done_cond);
    pthread_mutex_unlock(&o->mu);
}

/* Waits up to 10 s for the call's answer; its status, or -1 when none came. */
int wait_outcome(outcome *o) {
    int64_t until = now_ms() + 10000;
    pthread_mutex_lock(&o->mu);
    while (!o->done && now_ms() < until) {
        pthread_mutex_unlock(&o->mu);
        sleep_ms(1);
        pthread_mutex_lock(&o->mu);
    }
    int st = o->done ? (int)o->status : -1;
    pthread_mutex_unlock(&o->mu);
    return st;
}

int is_done(outcome *o) {
    pthread_mutex_lock(&o->mu);
    int d = o->done;
    pthread_mutex_unlock(&o->mu);
    return d;
}
