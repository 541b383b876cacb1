#include "deferred.h"

#include <stddef.h>

#include "client.h"
#include "clock.h"

static rl_client *client_of(rl_job *job) {
    return (rl_client *)((char *)job - offsetof(rl_client, deferred_job));
}

static void job_ref(rl_job *job) {
    rl_client_ref(client_of(job));
}

static void job_unref(rl_job *job) {
    rl_client_unref(client_of(job));
}

/* Arms the timer for `at_ms` unless it is armed (a pool noticed) or the workers are stopping. */
static void arm(rl_client *c, int64_t at_ms) {
    if (atomic_exchange(&c->deferred_armed, 1)) return;
    if (rl_workers_start(&c->workers) != 0 ||
        rl_workers_timer_set(&c->workers, &c->deferred_job, at_ms) != 0)
        atomic_store(&c->deferred_armed, 0); /* closing: close sends them */
}

/* Looks without a deferral after which the timer stops (about a second), until the next one:
 * while deferrals keep coming the timer keeps ticking, so a release never pays for arming it. */
#define QUIET_LOOKS 10

/* The timer: every pool's idle connections send what they deferred. */
static void send_deferred(rl_job *job) {
    rl_client *c = client_of(job);
    int seen = atomic_exchange(&c->deferred_seen, 0);
    int64_t timeout = c->cfg.options.command_timeout_ms;
    int64_t next = rl_pool_send_deferred(&c->pool, RL_DEFERRED_IDLE_MS, timeout);
    int64_t due = c->deploy->send_deferred(c, RL_DEFERRED_IDLE_MS, timeout); /* its pools */
    if (due && (!next || due < next)) next = due;
    c->deferred_quiet = seen || next ? 0 : c->deferred_quiet + 1; /* jobs run one at a time */
    if (next || c->deferred_quiet < QUIET_LOOKS) {
        int64_t at = next ? next : rl_now_ms() + RL_DEFERRED_IDLE_MS;
        if (rl_workers_timer_set(&c->workers, job, at) == 0) return;
    }
    atomic_store(&c->deferred_armed, 0);
    /* A deferral noticed since the look above found the timer armed and left it to us. */
    if (atomic_load(&c->deferred_seen)) arm(c, rl_now_ms() + RL_DEFERRED_IDLE_MS);
}

/* A pool's hook (any thread, no lock held): costs a load or two while the timer ticks. */
static void noticed(void *arg) {
    rl_client *c = arg;
    if (!atomic_load_explicit(&c->deferred_seen, memory_order_relaxed))
        atomic_store(&c->deferred_seen, 1);
    if (!atomic_load(&c->deferred_armed)) arm(c, rl_now_ms() + RL_DEFERRED_IDLE_MS);
}

void rl_deferred_init(rl_client *c) {
    c->deferred_job = (rl_job){.run = send_deferred, .ref = job_ref, .unref = job_unref};
    atomic_init(&c->deferred_armed, 0);
    atomic_init(&c->deferred_seen, 0);
    c->deferred_quiet = 0;
    c->cfg.on_deferred = noticed;
    c->cfg.on_deferred_arg = c;
}
