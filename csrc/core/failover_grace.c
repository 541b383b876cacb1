#include "failover_grace.h"

#include <stdlib.h>

#include "client.h"
#include "clock.h"
#include "slots.h"

/* Per slot, lock-free: a move sets its slots' ends (no clearing, so writers never race), and
 * `latest` lets a lock skip hashing its key when no slot's grace runs. */
struct rl_slot_grace {
    _Atomic int64_t latest;
    _Atomic int64_t until[RL_SLOTS];
};

void rl_failover_grace_begin(rl_client *c) {
    int64_t grace = c->cfg.options.failover_grace_ms;
    if (grace > 0) atomic_store(&c->grants_paused_until, rl_now_ms() + grace);
    atomic_fetch_add(&c->master_changes, 1); /* counted once the grace is on */
}

rl_status rl_failover_grace_per_slot(rl_client *c, rl_error *err) {
    c->slot_grace = calloc(1, sizeof *c->slot_grace);
    return c->slot_grace ? RL_OK : rl_fail(err, RL_ERR_MEMORY, "out of memory");
}

void rl_failover_grace_free_slots(rl_client *c) {
    free(c->slot_grace);
    c->slot_grace = NULL;
}

void rl_failover_grace_begin_slots(rl_client *c, const uint64_t *slots) {
    struct rl_slot_grace *g = c->slot_grace;
    int64_t grace = c->cfg.options.failover_grace_ms;
    if (g && grace > 0) {
        int64_t until = rl_now_ms() + grace;
        for (int s = 0; s < RL_SLOTS; s++)
            if (slots[s / 64] >> (s % 64) & 1) atomic_store(&g->until[s], until);
        atomic_store(&g->latest, until); /* after the slots: a reader that sees it sees them */
    }
    atomic_fetch_add(&c->master_changes, 1);
}

int64_t rl_failover_grace_left(rl_client *c, const char *key, size_t key_len, int64_t now_ms) {
    int64_t until = atomic_load_explicit(&c->grants_paused_until, memory_order_relaxed);
    struct rl_slot_grace *g = c->slot_grace;
    if (g && key && atomic_load(&g->latest) > now_ms) {
        int64_t slot_until = atomic_load(&g->until[rl_key_slot(key, key_len)]);
        if (slot_until > until) until = slot_until;
    }
    return until > now_ms ? until - now_ms : 0;
}
