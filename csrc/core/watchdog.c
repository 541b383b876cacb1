#include "watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "error.h"
#include "renew_calls.h"
#include "slots.h"
#include "threads.h"
#include "validity.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Renew many holds in one call: per key, ARGV[2i] is the owner's field and ARGV[2i+1] is empty,
 * or for a read hold the prefix of its hold keys (prefix:1 .. prefix:count), which are renewed
 * instead; the hash then keeps the longest lease of all its readers. A plain hold is looked for
 * first (HEXISTS, in pcall: a key of another type answers an error, not a failed batch), which
 * renews most holds with two calls; otherwise TYPE tells "gone" from "held by others". A
 * permit of a permit-expirable semaphore (ARGV[2i+1] RENEW_PERMIT) is renewed in its timeout
 * ZSET: KEYS[i] is the ZSET, ARGV[2i] the permit id in hex; it gets a new expiry date (Redis's
 * clock, epoch ms) unless its date has passed.
 * KEYS: names. ARGV: lease, then per key: owner field, read-hold key prefix or "". Per key: 1
 * renewed, 0 gone, 2 held by others */
const char rl_lua_renew[] =
    "local lease = tonumber(ARGV[1])\n"
    "local answers = {}\n"
    "local now\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local field, holds = ARGV[2 * i], ARGV[2 * i + 1]\n"
    "  local kind\n"
    "  if holds == '' and redis.pcall('hexists', key, field) == 1 then\n"
    "    kind = 'renewed'\n"
    "    redis.call('pexpire', key, lease)\n"
    "    answers[i] = 1\n"
    "  else\n"
    "    kind = redis.call('type', key).ok\n"
    "  end\n"
    "  if kind == 'renewed' then\n"
    "  elseif kind == 'none' then\n"
    "    answers[i] = 0\n"
    "  elseif holds == '" RL_RENEW_PERMIT "' then\n"
    "    if kind ~= 'zset' then\n"
    "      answers[i] = 2\n"
    "    else\n"
    "      if not now then\n"
    "        local t = redis.call('time')\n"
    "        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "      end\n"
    "      local id = field:gsub('..', function(h) return string.char(tonumber(h, 16)) end)\n"
    "      local date = redis.call('zscore', key, id)\n"
    "      if date == false or tonumber(date) <= now then\n"
    "        answers[i] = 0\n"
    "      else\n"
    "        redis.call('zadd', key, string.format('%.0f', now + lease), id)\n"
    "        answers[i] = 1\n"
    "      end\n"
    "    end\n"
    "  elseif kind ~= 'hash' then\n"
    "    answers[i] = 2\n"
    "  elseif holds == '' then\n"
    "    if redis.call('hexists', key, field) == 1 then\n"
    "      redis.call('pexpire', key, lease)\n"
    "      answers[i] = 1\n"
    "    else\n"
    "      answers[i] = 2\n"
    "    end\n"
    "  else\n"
    "    local count = tonumber(redis.call('hget', key, field) or '0') or 0\n"
    "    local alive = 0\n"
    "    for k = 1, count do alive = alive + redis.call('pexpire', holds .. ':' .. k, lease) end\n"
    "    if alive > 0 then\n"
    "      if redis.call('pttl', key) < lease then redis.call('pexpire', key, lease) end\n"
    "      answers[i] = 1\n"
    "    elseif count > 0 then\n"
    "      answers[i] = 0\n"
    "    else\n"
    "      answers[i] = 2\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return answers\n";
/* clang-format on */

void rl_watchdog_init(rl_watchdog *wd, rl_config *cfg) {
    *wd = (rl_watchdog){0};
    rl_conn_init(&wd->conn, cfg);
    rl_cond_init(&wd->wake);
    rl_cond_init(&wd->round_done);
    atomic_init(&wd->in_io, 0);
    atomic_init(&wd->master_moved, 0);
    atomic_init(&wd->slots_moved, 0);
    for (int i = 0; i < RL_SLOTS / 64; i++)
        atomic_init(&wd->moved_slots[i], 0);
}

void rl_watchdog_destroy(rl_watchdog *wd) {
    rl_conn_close(&wd->conn);
    pthread_cond_destroy(&wd->wake);
    pthread_cond_destroy(&wd->round_done);
}

static int64_t period_ms(const rl_client *c) {
    int64_t p = c->cfg.options.watchdog_timeout_ms / 3;
    return p > 0 ? p : 1;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Declares lost every watched hold whose confirmed lease has run out (Redis was not reached in
 * time: another owner may hold the lock from now on) or that reached its max_hold. Returns the
 * earliest end of a confirmed lease among the holds left, or INT64_MAX. Client mutex held. */
static int64_t settle_due_holds(rl_client *c, int64_t now) {
    int64_t earliest = INT64_MAX;
    for (rl_hold *h = c->holds.watch_head, *next; h; h = next) {
        next = h->watch_next; /* a hold declared lost leaves the list */
        if (h->releasing || h->lost) continue;
        if (h->renew_until && now >= h->renew_until)
            rl_client_hold_lost(c, h, RL_LOST_MAX_HOLD);
        else if (now >= h->confirmed_until)
            rl_client_hold_lost(c, h, RL_LOST_UNREACHABLE);
        else if (h->confirmed_until < earliest)
            earliest = h->confirmed_until;
    }
    return earliest;
}

/* The holds whose slot changed owner since the last round (rl_watchdog_slots_moved) go in doubt;
 * the round that follows verifies them on the new owner. */
static void doubt_moved_slots(rl_client *c) {
    uint64_t moved[RL_SLOTS / 64];
    for (int i = 0; i < RL_SLOTS / 64; i++)
        moved[i] = atomic_exchange(&c->watchdog.moved_slots[i], 0);
    for (rl_hold *h = c->holds.watch_head; h; h = h->watch_next) {
        if (h->releasing || h->lost) continue;
        size_t len;
        const char *key = rl_renew_key(h, &len);
        int slot = rl_key_slot(key, len);
        if (moved[slot / 64] >> (slot % 64) & 1)
            rl_hold_doubted(c, h, "its slot moved to another node");
    }
}

/* Renews batch[0..n) in exchanges of at most rl_watchdog_slice_holds holds, each within the
 * command timeout: a million holds are more than Redis renews within one command timeout, and a
 * round must not fail for being big. No exchange may outlast the first confirmed lease the round
 * carries (`bound`, INT64_MAX: none): that hold is then declared lost when its lease ends, not a
 * timeout later; nor the period. The slices that fail leave their answers at -1 (the caller
 * doubts those holds); the others count. Client mutex NOT held. */
static rl_status renew_slices(rl_client *c, rl_hold **batch, size_t n, int64_t lease,
                              int64_t command_timeout, int64_t period, int64_t bound,
                              long long *answers, uint32_t *servers, rl_renew_outcome *outcome,
                              rl_error *err) {
    rl_status st = RL_OK;
    size_t slice = rl_watchdog_slice_holds ? rl_watchdog_slice_holds : n;
    for (size_t at = 0; at < n; at += slice) {
        size_t m = n - at < slice ? n - at : slice;
        int64_t timeout = min64(command_timeout, period);
        if (bound != INT64_MAX) timeout = min64(timeout, bound - rl_now_ms());
        if (timeout < 1) timeout = 1;
        rl_renew_outcome part = {0};
        rl_error part_err;
        rl_status part_st = c->deploy->renew(c, batch + at, m, lease, timeout, answers + at,
                                             servers + at, &part, &part_err);
        outcome->round_trips += part.round_trips;
        outcome->calls += part.calls;
        outcome->failed_nodes += part.failed_nodes;
        if (part.nodes > outcome->nodes) outcome->nodes = part.nodes;
        if (part_st != RL_OK && st == RL_OK) {
            st = part_st;
            *err = part_err;
        }
    }
    return st;
}

size_t rl_watchdog_slice_holds = RL_WATCHDOG_SLICE_HOLDS;

/* One round. Called and returns with the client mutex held; drops it for the network. Returns 1
 * when Redis answered, 0 when the round must be retried; *earliest: the earliest end of a
 * confirmed lease among the holds still renewed (INT64_MAX: none). */
static int renew_round(rl_client *c, int64_t *earliest) {
    rl_watchdog *wd = &c->watchdog;
    int64_t start_us = rl_now_us(), start_cpu_us = rl_thread_cpu_us(), net_us = 0;
    int64_t round_start = rl_now_ms();
    *earliest = settle_due_holds(c, round_start);
    if (atomic_exchange(&wd->master_moved, 0))
        for (rl_hold *h = c->holds.watch_head; h; h = h->watch_next)
            if (!h->releasing && !h->lost) rl_hold_doubted(c, h, "its master changed");
    if (atomic_exchange(&wd->slots_moved, 0)) doubt_moved_slots(c);
    rl_hold **batch = malloc((c->holds.watched + 1) * sizeof *batch);
    if (!batch) return 0;
    size_t n = 0;
    for (rl_hold *h = c->holds.watch_head; h; h = h->watch_next) {
        if (h->releasing || h->lost) continue;
        h->in_round = 1;
        batch[n++] = h;
    }
    int64_t lease = c->cfg.options.watchdog_timeout_ms;
    int64_t sent_at = rl_now_ms();
    int64_t command_timeout = c->cfg.options.command_timeout_ms, period = period_ms(c);
    int64_t bound = *earliest;
    pthread_mutex_unlock(&c->mu);

    rl_error err = {.status = RL_OK, .message = "out of memory building a renewal round"};
    rl_status st = RL_ERR_MEMORY;
    rl_renew_outcome outcome = {0};
    long long *answers = malloc((n + 1) * sizeof *answers);
    uint32_t *servers = malloc((n + 1) * sizeof *servers);
    if (n > 0 && answers && servers) {
        atomic_store(&wd->in_io, 1);
        net_us = rl_now_us();
        st = renew_slices(c, batch, n, lease, command_timeout, period, bound, answers, servers,
                          &outcome, &err);
        net_us = rl_now_us() - net_us;
        atomic_store(&wd->in_io, 0);
    }

    pthread_mutex_lock(&c->mu);
    int64_t now = rl_now_ms();
    size_t renewed = 0;
    *earliest = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        rl_hold *h = batch[i];
        h->in_round = 0;
        long long answer = answers && servers ? answers[i] : -1; /* answered nodes count */
        uint32_t server = answer >= 0 ? servers[i] : 0;
        /* Answered by another server than the one that last renewed it (a failover, a restart, a
         * promoted replica): what that one confirmed may be gone. In doubt, and verified by this
         * very answer: still ours and held again, or lost to the change. */
        int moved = server && h->server && server != h->server && !h->lost && h->watched;
        if (moved) {
            wd->server_changes++;
            rl_hold_doubted(c, h, "its server changed (a failover or a restart)");
        }
        if (server && answer == 1) h->server = server;
        if (answer == 1) {
            rl_hold_confirmed(c, h, sent_at, lease);
            renewed++;
        } else if (h->lost || !h->watched) {
            /* released meanwhile, or declared lost by a release: nothing to say */
        } else if (answer == 0) {
            rl_client_hold_lost(c, h,
                                moved                       ? RL_LOST_FAILOVER
                                : now >= h->confirmed_until ? RL_LOST_EXPIRED
                                                            : RL_LOST_DELETED);
        } else if (answer == 2) {
            rl_client_hold_lost(c, h, RL_LOST_OWNER_CHANGED);
        } else if (now >= h->confirmed_until) {
            rl_client_hold_lost(c, h, RL_LOST_UNREACHABLE);
        } else {
            rl_hold_doubted(c, h, "its renewal failed");
        }
        if (!h->lost && h->watched && h->confirmed_until < *earliest)
            *earliest = h->confirmed_until;
    }
    wd->round_trips += outcome.round_trips;
    if (st == RL_OK) {
        wd->rounds++;
        wd->last_round_nodes = outcome.nodes;
        wd->calls += outcome.calls;
        wd->renewed += renewed;
        wd->last_round_holds = n;
        rl_events_push(&c->events, RL_EVENT_RENEWED, NULL, 0, 0, RL_LOST_NONE, renewed,
                       "renewal round done");
    } else if (n > 0) {
        wd->failed_rounds++;
        char message[RL_QUOTING_MESSAGE_SIZE];
        snprintf(message, sizeof message, "renewal of %zu hold(s) failed, retrying: %s", n,
                 err.message);
        rl_events_push(&c->events, RL_EVENT_RENEW_FAILED, NULL, 0, 0, RL_LOST_NONE, n, message);
    }
    pthread_cond_broadcast(&wd->round_done);
    free(answers);
    free(servers);
    free(batch);
    if (st == RL_OK) {
        wd->last_round_us = (uint64_t)(rl_now_us() - start_us);
        wd->last_round_cpu_us = (uint64_t)(rl_thread_cpu_us() - start_cpu_us);
        wd->last_round_net_us = (uint64_t)net_us;
        wd->round_us += wd->last_round_us;
        wd->round_cpu_us += wd->last_round_cpu_us;
    }
    return st == RL_OK || n == 0;
}

/* How often the deployment's topology is checked while holding (0: never): within the failover
 * grace, so that a holder is told of a failover before another client's grace ends; not more
 * often than every 100 ms however short the grace. */
static int64_t topology_period_ms(const rl_client *c) {
    int64_t grace = c->cfg.options.failover_grace_ms;
    return c->deploy->check_topology && grace > 0 ? (grace / 2 > 100 ? grace / 2 : 100) : 0;
}

/* A check shorter than this is not begun: the round due sooner goes first. */
#define TOPOLOGY_CHECK_MIN_MS 20

/* Checks the topology by `deadline` (the thread's loop, c->mu held; let go meanwhile): no later
 * than the next round is due, so that a slow node never delays a renewal (and the report of its
 * failure). Returns when the next check is due. */
static int64_t check_topology(rl_client *c, int64_t deadline, int64_t every) {
    pthread_mutex_unlock(&c->mu);
    c->deploy->check_topology(c, deadline);
    pthread_mutex_lock(&c->mu);
    return rl_now_ms() + every;
}

static void *watchdog_main(void *arg) {
    rl_client *c = arg;
    rl_watchdog *wd = &c->watchdog;
    const int64_t period = period_ms(c), topology_every = topology_period_ms(c);
    int64_t next_check = topology_every > 0 ? rl_now_ms() + topology_every : INT64_MAX;
    const int64_t retry_min = min64(100, period / 4 + 1), retry_max = min64(2000, period / 2 + 1);
    int64_t retry = retry_min, idle_since = -1;
    pthread_mutex_lock(&c->mu);
    wd->next_round = min64(wd->next_round, rl_now_ms() + period);
    while (!wd->stop) {
        int64_t next = wd->next_round;
        int64_t now = rl_now_ms();
        if (c->holds.watched == 0) {
            /* Linger one period so that a tight acquire/release loop does not start a thread
             * per hold. */
            if (idle_since < 0) idle_since = now;
            if (now - idle_since >= period) break;
            wd->lingering_until = idle_since + period;
            rl_cond_wait_until(&wd->wake, &c->mu, idle_since + period);
            wd->lingering_until = 0;
            continue;
        }
        if (idle_since >= 0) { /* a hold again, after none: its due time is in next_round */
            idle_since = -1;
            wd->next_round = next = min64(now + period, next);
        }
        int moved = atomic_load(&wd->master_moved) || atomic_load(&wd->slots_moved);
        if (now >= next_check && !moved && next - now >= TOPOLOGY_CHECK_MIN_MS) {
            next_check = check_topology(c, min64(now + topology_every, next), topology_every);
            continue; /* what changed meanwhile (a move, a new hold) is read afresh */
        }
        if (now < next && !moved) { /* (a check due that did not fit: after the round) */
            rl_cond_wait_until(&wd->wake, &c->mu,
                               next_check > now ? min64(next, next_check) : next);
            continue;
        }
        int64_t earliest;
        if (renew_round(c, &earliest)) {
            retry = retry_min;
            next += period; /* fixed rate */
            if (next < rl_now_ms()) next = rl_now_ms();
            /* No hold may wait for a round until less than a period of its lease is left (one
             * that waited long for its replicas, say). */
            if (earliest != INT64_MAX) next = min64(next, earliest - period);
        } else {
            /* Retry with back-off, but be awake when the first confirmed lease ends (not
             * sooner: a lease with less than a period left must not make the retries spin). */
            next = min64(rl_now_ms() + retry, earliest);
            retry = min64(retry * 2, retry_max);
        }
        wd->next_round = next;
    }
    wd->running = 0;
    pthread_cond_broadcast(&wd->round_done);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* A master or slot change learned while nothing was held concerns no hold: the first new one was
 * taken from the map as it is now, so it must not be put in doubt for it at the next round. */
static void forget_moves(rl_watchdog *wd) {
    atomic_store(&wd->master_moved, 0);
    atomic_store(&wd->slots_moved, 0);
    for (int i = 0; i < RL_SLOTS / 64; i++)
        atomic_store(&wd->moved_slots[i], 0);
}

int rl_watchdog_watch(rl_client *c, rl_hold *hold) {
    rl_watchdog *wd = &c->watchdog;
    if (c->holds.watched == 0 && (atomic_load(&wd->slots_moved) || atomic_load(&wd->master_moved)))
        forget_moves(wd); /* (the test first: clearing the slot map's bits costs a cycle 9%) */
    rl_holds_watch(&c->holds, hold);
    if (wd->running) {
        /* Only a thread that would wake too late for this hold is woken: waking it for every
         * acquire, as a loop of acquire and release on one lock would, costs two task switches
         * per cycle. Its next round, a period away at most, takes the new hold (its lease is
         * three periods) unless the hold is due sooner (it waited for its replicas). A thread
         * lingering with nothing to renew wakes within a period, and then schedules its first
         * round from next_round. */
        int64_t due = hold->confirmed_until - period_ms(c);
        if (wd->lingering_until > 0) {
            if (c->holds.watched == 1 || due < wd->next_round) wd->next_round = due;
            if (wd->lingering_until > due) pthread_cond_signal(&wd->wake);
        } else if (due < wd->next_round) {
            wd->next_round = due;
            pthread_cond_signal(&wd->wake);
        }
        return RL_WATCH_OK;
    }
    if (wd->thread_started) { /* it left its loop: reap it before starting anew */
        pthread_join(wd->thread, NULL);
        wd->thread_started = 0;
    }
    if (wd->stop || rl_thread_start(&wd->thread, watchdog_main, c) != 0) {
        rl_holds_unwatch(&c->holds, hold);
        return wd->stop ? RL_WATCH_STOPPED : RL_WATCH_NO_THREAD;
    }
    wd->thread_started = 1;
    wd->running = 1;
    wd->next_round = hold->confirmed_until - period_ms(c); /* the thread may start later */
    return RL_WATCH_OK;
}

void rl_watchdog_wait_out_round(rl_client *c, rl_hold *hold) {
    while (hold->in_round)
        pthread_cond_wait(&c->watchdog.round_done, &c->mu);
}

void rl_watchdog_master_moved(rl_client *c) {
    atomic_store(&c->watchdog.master_moved, 1);
    pthread_cond_signal(&c->watchdog.wake);
}

void rl_watchdog_slots_moved(rl_client *c, const uint64_t *slots) {
    for (int i = 0; i < RL_SLOTS / 64; i++)
        if (slots[i]) atomic_fetch_or(&c->watchdog.moved_slots[i], slots[i]);
    atomic_store(&c->watchdog.slots_moved, 1);
    pthread_cond_signal(&c->watchdog.wake);
}

void rl_watchdog_settle(rl_client *c) {
    int64_t now = rl_now_ms(), lease = c->cfg.options.watchdog_timeout_ms;
    settle_due_holds(c, now);
    for (rl_hold *h = c->holds.watch_head; h; h = h->watch_next)
        if (!h->releasing && !h->lost && h->watchdog && h->confirmed_until - now < lease / 2)
            rl_hold_doubted(c, h, "its renewal is late");
}

void rl_watchdog_stop(rl_client *c) {
    rl_watchdog *wd = &c->watchdog;
    pthread_mutex_lock(&c->mu);
    wd->stop = 1;
    pthread_cond_broadcast(&wd->wake);
    int started = wd->thread_started;
    wd->thread_started = 0;
    pthread_mutex_unlock(&c->mu);
    rl_conn_interrupt(&wd->conn); /* a round on the wire ends now */
    if (started) pthread_join(wd->thread, NULL);
    rl_conn_close(&wd->conn);
}

void rl_watchdog_forget_after_fork(rl_watchdog *wd) {
    if (atomic_load(&wd->in_io))
        rl_conn_abandon(&wd->conn);
    else
        rl_conn_close(&wd->conn);
    atomic_store(&wd->in_io, 0);
    wd->thread_started = 0;
    wd->running = 0;
    wd->stop = 0;
}
