/* Fork safety: pthread_atfork handlers keep every client's state consistent across fork(), and a
 * generation number tells a child's clients that what they hold belongs to the parent. */
#ifndef RL_FORK_H
#define RL_FORK_H

#include <stdint.h>

#include "redlease.h"

void rl_fork_register(rl_client *c);
void rl_fork_unregister(rl_client *c);
uint64_t rl_fork_generation(void);

#endif
