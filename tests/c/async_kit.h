/* Helpers for the tests of async calls (test_async.c, test_family_async.c): one call's outcome,
 * recorded by its done callback on a worker and waited for by the test's thread. */
#ifndef RL_TEST_ASYNC_KIT_H
#define RL_TEST_ASYNC_KIT_H

#include <pthread.h>

#include "harness.h"

typedef struct outcome {
    pthread_mutex_t mu;
    pthread_cond_t done_cond;
    int done;
    rl_status status;
    int64_t value;
    int64_t at;
    char message[sizeof((rl_error *)0)->message];
} outcome;

void outcome_init(outcome *o);
void outcome_destroy(outcome *o);
/* The done callback: userdata is the outcome. */
void record(rl_call *call, rl_status st, int64_t value, const rl_error *err, void *ud);
/* Waits up to 10 s for the call's answer; its status, or -1 when none came. */
int wait_outcome(outcome *o);
int is_done(outcome *o);

#endif
