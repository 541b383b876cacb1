/* Counting for rl_client_stats: relaxed atomics (each counter is read on its own). */
#include "metrics.h"

#include <string.h>

void rl_metrics_init(rl_metrics *m) {
    atomic_init(&m->acquisitions, 0);
    atomic_init(&m->waits, 0);
    atomic_init(&m->wait_total_us, 0);
    atomic_init(&m->wait_max_us, 0);
    for (int i = 0; i < RL_LOST_REASON_COUNT; i++)
        atomic_init(&m->lost[i], 0);
    atomic_init(&m->waiters, 0);
}

void rl_metrics_acquired(rl_metrics *m) {
    atomic_fetch_add_explicit(&m->acquisitions, 1, memory_order_relaxed);
}

void rl_metrics_wait_begins(rl_metrics *m) {
    atomic_fetch_add_explicit(&m->waiters, 1, memory_order_relaxed);
}

void rl_metrics_wait_ends(rl_metrics *m, uint64_t waited_us) {
    atomic_fetch_sub_explicit(&m->waiters, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->wait_total_us, waited_us, memory_order_relaxed);
    uint64_t max = atomic_load_explicit(&m->wait_max_us, memory_order_relaxed);
    while (waited_us > max &&
           !atomic_compare_exchange_weak_explicit(&m->wait_max_us, &max, waited_us,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

void rl_metrics_lost(rl_metrics *m, rl_lost_reason reason) {
    if ((int)reason > 0 && (int)reason < RL_LOST_REASON_COUNT)
        atomic_fetch_add_explicit(&m->lost[reason], 1, memory_order_relaxed);
}

void rl_metrics_synced(rl_metrics *m, int acked) {
    if (acked < 0) {
        atomic_fetch_add_explicit(&m->sync_skipped, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&m->sync_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sync_acks, (uint64_t)acked, memory_order_relaxed);
}

void rl_metrics_woken_sent(rl_metrics *m) {
    atomic_fetch_add_explicit(&m->woken_acquires, 1, memory_order_relaxed);
}

void rl_metrics_read(rl_metrics *m, rl_stats *out) {
    out->acquisitions = atomic_load_explicit(&m->acquisitions, memory_order_relaxed);
    out->waits = atomic_load_explicit(&m->waits, memory_order_relaxed);
    out->wait_total_us = atomic_load_explicit(&m->wait_total_us, memory_order_relaxed);
    out->wait_max_us = atomic_load_explicit(&m->wait_max_us, memory_order_relaxed);
    out->lost_total = 0;
    for (int i = 0; i < RL_LOST_REASON_COUNT; i++) {
        out->lost[i] = atomic_load_explicit(&m->lost[i], memory_order_relaxed);
        out->lost_total += out->lost[i];
    }
    int64_t waiters = atomic_load_explicit(&m->waiters, memory_order_relaxed);
    out->waiters = waiters > 0 ? (size_t)waiters : 0;
    out->sync_waits = atomic_load_explicit(&m->sync_waits, memory_order_relaxed);
    out->sync_acks = atomic_load_explicit(&m->sync_acks, memory_order_relaxed);
    out->sync_skipped = atomic_load_explicit(&m->sync_skipped, memory_order_relaxed);
    out->woken_acquires = atomic_load_explicit(&m->woken_acquires, memory_order_relaxed);
}
