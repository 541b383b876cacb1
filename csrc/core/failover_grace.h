/* The failover grace: after this client followed a new master (a Sentinel failover, or a Cluster
 * slot that changed owner), it grants no new hold there for failover_grace_ms. With asynchronous
 * replication the promoted replica may lack a lock another client holds on the old master; that
 * holder's client hears of the same failover and puts its hold in doubt (watchdog.c). The grace
 * gives it that time, so that a holder is told before anyone else is granted its lock on the new
 * master, instead of racing the acquire. */
#ifndef RL_FAILOVER_GRACE_H
#define RL_FAILOVER_GRACE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct rl_client rl_client;

/* A new master was learned (any thread, no lock held): no grant before now + the grace. */
void rl_failover_grace_begin(rl_client *c);

/* Cluster: keep the grace per slot (before any call); rl_failover_grace_free_slots undoes it. */
rl_status rl_failover_grace_per_slot(rl_client *c, rl_error *err);
void rl_failover_grace_free_slots(rl_client *c);

/* Slots (a bitmap of RL_SLOTS bits) changed owner: no grant on them before now + the grace. */
void rl_failover_grace_begin_slots(rl_client *c, const uint64_t *slots);

/* How many ms of the grace are left at now_ms for a lock on `key` (0: none; grants go ahead). */
int64_t rl_failover_grace_left(rl_client *c, const char *key, size_t key_len, int64_t now_ms);

#endif
