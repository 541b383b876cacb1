/* The failover grace: after this client followed a new master (a Sentinel failover), it grants
 * no new hold for failover_grace_ms. With asynchronous replication the promoted replica may lack
 * a lock another client holds on the old master; that holder's client hears of the same failover
 * and puts its hold in doubt (watchdog.c). The grace gives it that time, so that a holder is told
 * before anyone else is granted its lock on the new master, instead of racing the acquire. */
#ifndef RL_FAILOVER_GRACE_H
#define RL_FAILOVER_GRACE_H

#include <stdint.h>

typedef struct rl_client rl_client;

/* A new master was learned (any thread, no lock held): no grant before now + the grace. */
void rl_failover_grace_begin(rl_client *c);

/* How many ms of the grace are left at now_ms (0: none; grants go ahead). */
int64_t rl_failover_grace_left(rl_client *c, int64_t now_ms);

#endif
