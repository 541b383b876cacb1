/* The client's operating counters (rl_stats' acquisitions, waits, losses, waiters): atomics, so
 * that counting never takes the client mutex or slows an acquire. */
#ifndef RL_METRICS_H
#define RL_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "redlease.h"

typedef struct rl_metrics {
    _Atomic uint64_t acquisitions;
    _Atomic uint64_t waits;
    _Atomic uint64_t wait_total_us;
    _Atomic uint64_t wait_max_us;
    _Atomic uint64_t lost[RL_LOST_REASON_COUNT];
    _Atomic int64_t waiters;
    _Atomic uint64_t sync_waits, sync_acks, sync_skipped;
    _Atomic uint64_t woken_acquires;
} rl_metrics;

void rl_metrics_init(rl_metrics *m);
void rl_metrics_acquired(rl_metrics *m);
/* A wait begins (+1 waiter) / ends after `waited_us` (-1 waiter, one wait counted). */
void rl_metrics_wait_begins(rl_metrics *m);
void rl_metrics_wait_ends(rl_metrics *m, uint64_t waited_us);
void rl_metrics_lost(rl_metrics *m, rl_lost_reason reason);
/* A lock write's replica sync: `acked` replicas acknowledged its WAIT; -1: none was sent (no
 * replica listed). */
void rl_metrics_synced(rl_metrics *m, int acked);
/* A waiter read the answer to an acquire the subscriber thread sent for it (woken_acquire.c). */
void rl_metrics_woken_sent(rl_metrics *m);
/* Copies the counters into the rl_stats fields they fill. */
void rl_metrics_read(rl_metrics *m, rl_stats *out);

#endif
