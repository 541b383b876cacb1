/* Helpers for the tests of the lock family beyond locks (semaphores, latches, multi-locks). */
#ifndef RL_TEST_FAMILY_KIT_H
#define RL_TEST_FAMILY_KIT_H

#include "harness.h"

/* Each exits the run when the object cannot be made. */
rl_semaphore *new_semaphore(rl_client *c, const char *name);
rl_expirable *new_expirable(rl_client *c, const char *name);
rl_countdown *new_countdown(rl_client *c, const char *name);

/* Clients of the shared server subscribed to `channel` (PUBSUB NUMSUB). */
long long subscribers(const char *channel);

/* Redis's clock, in epoch ms (TIME). */
long long redis_epoch_ms(void);

#endif
