#include "failover_grace.h"

#include "client.h"
#include "clock.h"

void rl_failover_grace_begin(rl_client *c) {
    int64_t grace = c->cfg.options.failover_grace_ms;
    if (grace > 0) atomic_store(&c->grants_paused_until, rl_now_ms() + grace);
    atomic_fetch_add(&c->master_changes, 1); /* counted once the grace is on */
}

int64_t rl_failover_grace_left(rl_client *c, int64_t now_ms) {
    int64_t until = atomic_load_explicit(&c->grants_paused_until, memory_order_relaxed);
    return until > now_ms ? until - now_ms : 0;
}
