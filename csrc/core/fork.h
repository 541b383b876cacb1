/* Fork safety: pthread_atfork handlers keep every client's state consistent across fork(), and a
 * generation number tells a child's clients that what they hold belongs to the parent. */
#ifndef RL_FORK_H
#define RL_FORK_H

#include <stdint.h>

#include "redlease.h"

void rl_fork_register(rl_client *c);
void rl_fork_unregister(rl_client *c);
uint64_t rl_fork_generation(void);

/* Every open client, each entered (rl_client_enter: the caller calls rl_client_leave on each);
 * *out is malloc'd. Returns how many (0 when there are none or memory ran out). */
size_t rl_clients_entered(rl_client ***out);

#endif
