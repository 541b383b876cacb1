/* Every lock kind's flow (Redisson RLock, RFencedLock, RFairLock, RReadWriteLock): acquire with
 * waiting, release through the unlock latch, force unlock and the server-side queries; the
 * kinds' own keys and scripts are in lock_calls.c. The local hold table is updated in the same
 * critical section that reads each Redis answer, so renewal starts and stops exactly with the hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "failover_grace.h"
#include "lock.h"
#include "names.h"
#include "random.h"
#include "validity.h"
#include "waiting.h"
#include "woken_acquire.h"

void rl_lock_free(rl_lock *l) {
    if (!l) return;
    if (l->client) rl_client_unref(l->client);
    free(l);
}

rl_status rl_lock_new(rl_client *c, const void *name, size_t name_len, rl_lock **out,
                      rl_error *err) {
    return rl_lock_new_kind(c, RL_LOCK_REENTRANT, name, name_len, out, err);
}

rl_status rl_lock_new_kind(rl_client *c, rl_lock_kind kind, const void *name, size_t name_len,
                           rl_lock **out, rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!name || name_len == 0)
        return rl_fail(err, RL_ERR_ARGUMENT, "a lock name must not be empty");
    if (kind < RL_LOCK_REENTRANT || kind > RL_LOCK_WRITE)
        return rl_fail(err, RL_ERR_ARGUMENT, "unknown lock kind %d", (int)kind);
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    if ((st = c->deploy->check_name(name, name_len, "lock", err)) != RL_OK) {
        rl_client_leave(c);
        return st;
    }
    rl_lock *l = rl_lock_alloc(kind, name, name_len);
    if (!l) {
        rl_client_leave(c);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    l->client = c;
    rl_client_ref(c);
    rl_client_leave(c);
    *out = l;
    return RL_OK;
}

rl_lock_kind rl_lock_kind_of(const rl_lock *l) {
    return l ? l->kind : RL_LOCK_REENTRANT;
}

const char *rl_lock_name(const rl_lock *l, size_t *len) {
    if (len) *len = l ? l->name_len : 0;
    return l ? l->name : NULL;
}

/* For messages: the name, cut short and with unprintable bytes as '?'. */
static const char *printable(const rl_lock *l, char out[RL_NAME_SHOWN_MAX]) {
    return rl_name_shown(l->name, l->name_len, out);
}

/* A write the replicas did not acknowledge, already done on the master: said as an event. */
static void report_unsynced(rl_lock *l, const char *what, const rl_error *why) {
    char message[RL_QUOTING_MESSAGE_SIZE], shown[RL_NAME_SHOWN_MAX];
    snprintf(message, sizeof message, "%s of lock \"%s\": %s", what, printable(l, shown),
             why->message);
    rl_events_push(&l->client->events, RL_EVENT_SYNC_FAILED, l->name, l->name_len, 0, RL_LOST_NONE,
                   1, message);
}

typedef rl_attempt attempt;

/* A fair waiter told to wait 0 ms (the lock is free but another waiter is first in line) looks
 * again this often, so that a waiter that died in the queue holds the line up only until its
 * place expires. */
#define FAIR_RECHECK_MS 100

/* A grant that came with the news of a new master (the call itself followed it: its connection
 * found the old one gone and asked the sentinels) is given back: the failover grace holds for it
 * too. 1 when it was. */
static int given_back_for_grace(rl_lock *l, attempt *a, int64_t *wait_hint) {
    rl_client *c = l->client;
    if (!a->fresh || atomic_load(&c->master_changes) == a->masters_seen) return 0;
    int64_t left = rl_failover_grace_left(c, l->name, l->name_len, rl_now_ms());
    if (left <= 0) return 0;
    rl_lock_call_undo_acquire(l, a->owner, a->owner_len, a->lease);
    a->grace_left = left;
    *wait_hint = left;
    return 1;
}

/* A grant answered when the lease it granted had ended by this client's clock, counted from the
 * sending (the process was paused between sending and reading, or the answer waited that long):
 * another owner may have been granted the lock since, so it must not be reported acquired. It
 * is given back (a no-op when it expired) and the acquire goes on as if refused, as Redlock does
 * with a validity below zero. One answered within the drift margin of that end is acquired and
 * in doubt at once (validity.c): a lease shorter than the margin must still be acquirable. A
 * re-entry is the watchdog's to verify. 1 when it was. */
static int given_back_as_late(rl_lock *l, attempt *a, int64_t *wait_hint) {
    if (a->reentered || rl_now_ms() < a->sent_at + a->lease) return 0;
    rl_lock_call_undo_acquire(l, a->owner, a->owner_len, a->lease);
    a->late = 1;
    *wait_hint = 0; /* a waiting acquire tries again at once */
    return 1;
}

/* The grant in hand is not the caller's (given back): 1. */
static int given_back(rl_lock *l, attempt *a, int64_t *wait_hint) {
    return given_back_for_grace(l, a, wait_hint) || given_back_as_late(l, a, wait_hint);
}

rl_status rl_acquire_try(rl_lock *l, attempt *a, int queue, int64_t *wait_hint, rl_error *err) {
    a->masters_seen = atomic_load(&l->client->master_changes);
    a->late = 0;
    a->sent_at = rl_now_ms();
    /* Just after a failover nothing new is granted (failover_grace.h); a re-entry goes ahead:
     * the script tells a hold the new master lacks from one it has. */
    a->grace_left =
        a->fresh ? rl_failover_grace_left(l->client, l->name, l->name_len, a->sent_at) : 0;
    if (a->grace_left > 0) {
        *wait_hint = a->grace_left;
        return RL_NOT_ACQUIRED;
    }
    rl_status st = rl_lock_call_acquire(l, a->owner, a->owner_len, a->lease, queue, a->window,
                                        wait_hint, &a->token, &a->reentered, err);
    if (st == RL_OK && given_back(l, a, wait_hint)) return RL_NOT_ACQUIRED;
    a->server = rl_client_answered_by();
    if (st == RL_NOT_ACQUIRED && l->kind == RL_LOCK_FAIR && *wait_hint < FAIR_RECHECK_MS)
        *wait_hint = FAIR_RECHECK_MS;
    return st;
}

/* Gives the waiter our release just woke its chance (wake_grace.c): waits, subscribed, until that
 * waiter's own release message (the channel's next message past `floor`, which counts our
 * release's own) or the grace's end, whichever comes first. It observes: the message that woke
 * that waiter, when the waiter is a thread of this client, stays that waiter's. */
static rl_status yield_to_woken(rl_client *c, rl_sub_ticket *ticket, int64_t until, uint64_t floor,
                                rl_wait_hook hook, void *hook_ud, rl_error *err) {
    rl_wait_observe(ticket, 1, floor);
    rl_status st = rl_wait_sleep(c, ticket, until, hook, hook_ud, err);
    rl_wait_observe(ticket, 0, 0);
    return st == RL_NOT_ACQUIRED ? RL_OK : st; /* the grace ran out: try now */
}

/* Sleeps as rl_wait_sleep, with the next acquire ready for the subscriber thread to send when a
 * release message wakes this waiter (woken_acquire.h). *answered: it was sent and answered, and
 * the return is that answer (as rl_acquire_try's); else the return is the sleep's. */
static rl_status sleep_sending(rl_lock *l, attempt *a, rl_sub_ticket *ticket, int64_t until,
                               rl_wait_hook hook, void *hook_ud, int64_t *wait_hint, int *answered,
                               rl_error *err) {
    rl_sub_send send;
    a->masters_seen = atomic_load(&l->client->master_changes);
    a->late = 0;
    int ready = rl_woken_prime(l, a, &send);
    ticket->send = ready ? &send : NULL;
    rl_status st = rl_wait_sleep(l->client, ticket, until, hook, hook_ud, err);
    ticket->send = NULL;
    *answered = 0;
    if (ready) {
        rl_status answer;
        /* A sent acquire ends the wait with RL_OK, the only outcome it can come with. */
        if (st == RL_OK && rl_woken_read(l, a, &send, wait_hint, &answer, err)) {
            *answered = 1;
            st = answer == RL_OK && given_back(l, a, wait_hint) ? RL_NOT_ACQUIRED : answer;
        }
        rl_woken_free(&send);
    }
    return st;
}

/* Subscribe, try again, then sleep until a release message or the holder's lease end, and
 * repeat until acquired, the deadline, an abort or an error. */
static rl_status wait_and_retry(rl_lock *l, attempt *a, int64_t deadline, int64_t wait_hint,
                                rl_wait_hook hook, void *hook_ud, rl_error *err) {
    rl_client *c = l->client;
    size_t channel_len;
    char *channel = rl_lock_wait_channel(l, a->owner, a->owner_len, &channel_len);
    rl_sub_ticket ticket;
    rl_status st = channel ? rl_wait_join(c, channel, channel_len, 0, &ticket, err)
                           : rl_fail(err, RL_ERR_MEMORY, "out of memory");
    free(channel);
    if (st == RL_OK && a->yield_until >= 0) {
        int64_t until = deadline >= 0 && deadline < a->yield_until ? deadline : a->yield_until;
        st = yield_to_woken(c, &ticket, until, a->yield_floor, hook, hook_ud, err);
    }
    if (st == RL_OK) {
        int answered = 0; /* the acquire the subscriber thread sent answered: no try of our own */
        for (;;) {
            if (!answered) /* after subscribing: no wake-up missed */
                st = rl_acquire_try(l, a, 1, &wait_hint, err);
            if (st != RL_NOT_ACQUIRED) break;
            int64_t now = rl_now_ms();
            if (deadline >= 0 && now >= deadline) break;
            int64_t until = deadline;
            if (wait_hint >= 0 && (until < 0 || now + wait_hint < until)) until = now + wait_hint;
            st = sleep_sending(l, a, &ticket, until, hook, hook_ud, &wait_hint, &answered, err);
            if (answered) continue;
            if (st != RL_OK && st != RL_NOT_ACQUIRED) break; /* aborted, closed, unreachable */
        }
        rl_wait_leave(&ticket);
    }
    return st;
}

/* Records an acquired hold and, in watchdog mode, starts its renewal: in one critical section
 * with the answer, so there is no moment when the hold exists without its renewal. */
static rl_status record_hold(rl_lock *l, uint64_t context, const attempt *a, int64_t lease_ms,
                             int64_t max_hold_ms, rl_error *err) {
    rl_client *c = l->client;
    char shown[RL_NAME_SHOWN_MAX];
    size_t read_keys_len = 0;
    char *read_keys = rl_lock_read_keys(l, a->owner, a->owner_len, &read_keys_len);
    rl_status st = RL_OK;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    if (h && h->count > 0 && !h->lost && !a->reentered)
        /* Redis granted it afresh: the hold this context had was gone (deleted, expired) before
         * the watchdog could tell. */
        rl_client_hold_lost(c, h,
                            rl_now_ms() >= h->confirmed_until ? RL_LOST_EXPIRED : RL_LOST_DELETED);
    if (h && h->lost) {
        /* The hold was lost while this acquire was on the wire: what Redis granted now is not
         * part of a hold that is renewed. Take it back; the caller must release first. */
        rl_lost_reason reason = h->lost;
        pthread_mutex_unlock(&c->mu);
        free(read_keys);
        rl_lock_call_undo_acquire(l, a->owner, a->owner_len, a->lease);
        return rl_fail_lost(err, reason, "; release it first", printable(l, shown));
    }
    if (!h && (l->kind != RL_LOCK_READ || read_keys))
        /* its owner field, rl_lock_field of a->owner, is derived again (rl_hold_owner) */
        h = rl_holds_add(&c->holds, l->name, l->name_len, l->kind, context, NULL, read_keys,
                         read_keys_len);
    if (!h) {
        /* Held in Redis but untracked: it expires by its lease, never renewed. */
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory recording a hold");
    } else {
        if (h->count == 0 && max_hold_ms > 0) h->renew_until = a->sent_at + max_hold_ms;
        h->count++;
        h->token = a->token;
        /* The server that granted it: a renewal answered by another is a failover or restart
         * (watchdog.c), even before the hold's first renewal. */
        if (a->server) h->server = a->server;
        rl_hold_confirmed(c, h, a->sent_at, a->lease);
        if (lease_ms == RL_LEASE_WATCHDOG)
            h->watchdog = 1;
        else
            h->lease_ms = lease_ms;
        int watch = h->watchdog && !h->watched ? rl_watchdog_watch(c, h) : RL_WATCH_OK;
        if (watch != RL_WATCH_OK) {
            /* Told "not acquired", the caller will not release: forget the hold locally and let
             * Redis expire it by its lease. */
            if (--h->count <= 0) rl_holds_remove(&c->holds, h);
            st = watch == RL_WATCH_STOPPED
                     ? rl_fail(err, RL_ERR_CLOSED, "the client is closed")
                     : rl_fail(err, RL_ERR_MEMORY, "cannot start the watchdog thread");
        }
    }
    pthread_mutex_unlock(&c->mu);
    free(read_keys);
    return st;
}

void rl_acquire_options_init(rl_acquire_options *o) {
    memset(o, 0, sizeof *o);
    o->lease_ms = RL_LEASE_WATCHDOG;
    o->wait_ms = RL_WAIT_FOREVER;
}

rl_status rl_lock_acquire(rl_lock *l, uint64_t context, int64_t lease_ms, int64_t wait_ms,
                          rl_wait_hook hook, void *hook_userdata, rl_error *err) {
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    o.hook = hook;
    o.hook_userdata = hook_userdata;
    return rl_lock_acquire_with(l, context, &o, err);
}

static rl_status release_one(rl_lock *l, rl_hold *h, int settling, rl_error *err);

/* Before an acquire (client mutex held): this context's hold must be healthy, and a release of
 * it that failed on the network is settled first (the same request again, answered from its
 * unlock latch if Redis did it), so that the acquire starts from what Redis holds and the new
 * hold is renewed. */
static rl_status check_hold_before_acquire(rl_lock *l, uint64_t context, int *fresh,
                                           rl_error *err) {
    char shown[RL_NAME_SHOWN_MAX];
    rl_hold *h = rl_holds_find(&l->client->holds, l->name, l->name_len, l->kind, context);
    *fresh = !h || h->count == 0; /* (a failover's grace applies to a context holding none) */
    if (h && h->lost) return rl_fail_lost(err, h->lost, "; release it first", printable(l, shown));
    if (h && h->release_failed) {
        rl_status st = release_one(l, h, 1, err);
        h = rl_holds_find(&l->client->holds, l->name, l->name_len, l->kind, context);
        *fresh = !h || h->count == 0; /* the settled release may have dropped it */
        return st;
    }
    return RL_OK;
}

rl_status rl_acquire_begin(rl_lock *l, uint64_t context, const rl_acquire_options *o, attempt *a,
                           rl_error *err) {
    int64_t lease_ms = o->lease_ms, wait_ms = o->wait_ms;
    if ((lease_ms <= 0 && lease_ms != RL_LEASE_WATCHDOG) || lease_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    if (o->max_hold_ms < 0 && o->max_hold_ms != RL_MAX_HOLD_NONE)
        return rl_fail(err, RL_ERR_ARGUMENT, "max_hold must be > 0, 0 (the client's) or none");
    if (wait_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "a wait must be at most 2^40 ms (or forever)");
    rl_client *c = l->client;
    *a = (attempt){.token = 0};
    a->owner_len = rl_client_owner(c, context, a->owner);
    pthread_mutex_lock(&c->mu);
    rl_status st = check_hold_before_acquire(l, context, &a->fresh, err);
    /* Only an acquire that may wait yields; a one-try acquire answers at once. */
    a->yield_until = wait_ms != 0 ? rl_handovers_until(&c->handovers, l->name, l->name_len, l->kind,
                                                       rl_now_ms(), &a->yield_floor)
                                  : -1;
    pthread_mutex_unlock(&c->mu);
    a->lease = lease_ms > 0 ? lease_ms : c->cfg.options.watchdog_timeout_ms;
    a->window = wait_ms > 0 ? wait_ms : c->cfg.options.fair_wait_ms;
    return st;
}

rl_status rl_acquire_end(rl_lock *l, uint64_t context, attempt *a, const rl_acquire_options *o,
                         rl_status st, rl_error *err) {
    rl_client *c = l->client;
    char shown[RL_NAME_SHOWN_MAX];
    /* A fair waiter that did not get the lock leaves the queue, whatever stopped it (timeout,
     * abort, an error even on the first try, which may have queued it before failing). */
    if (st != RL_OK && o->wait_ms != 0 && l->kind == RL_LOCK_FAIR)
        rl_lock_call_leave_queue(l, a->owner, a->owner_len, a->window);
    int64_t max_hold = o->max_hold_ms == 0  ? c->cfg.options.max_hold_ms
                       : o->max_hold_ms > 0 ? o->max_hold_ms
                                            : 0;
    if (st == RL_OK) {
        st = record_hold(l, context, a, o->lease_ms, max_hold, err);
        if (st == RL_OK) rl_metrics_acquired(&c->metrics);
    } else if (st == RL_NOT_ACQUIRED && a->grace_left > 0) {
        rl_fail(err, RL_NOT_ACQUIRED,
                "lock \"%s\" is not granted yet: this client followed a new master, and grants "
                "nothing for %lld ms more (failover_grace) so that a holder on the old one is "
                "told first",
                printable(l, shown), (long long)a->grace_left);
        if (err) err->grace_left_ms = a->grace_left;
    } else if (st == RL_NOT_ACQUIRED && a->late) {
        rl_fail(err, RL_NOT_ACQUIRED,
                "lock \"%s\" was granted, but the answer came after the lease it granted had "
                "ended (was this process paused?): given back, not acquired",
                printable(l, shown));
    } else if (st == RL_NOT_ACQUIRED) {
        char waited[RL_WAITED_SIZE];
        rl_fail(err, RL_NOT_ACQUIRED, "lock \"%s\" is held by another owner%s%s",
                printable(l, shown), o->wait_ms > 0 ? "; not acquired " : "",
                rl_waited(o->wait_ms, "", waited));
    }
    return st;
}

rl_status rl_lock_acquire_with(rl_lock *l, uint64_t context, const rl_acquire_options *o,
                               rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    if (!o) return rl_fail(err, RL_ERR_ARGUMENT, "options must not be NULL");
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    attempt a;
    st = rl_acquire_begin(l, context, o, &a, err);
    if (st == RL_OK) {
        int64_t start = rl_now_ms(), wait_hint = -1, wait_ms = o->wait_ms;
        /* Yielding to a waiter we woke: its chance first, then the usual wait. */
        st = a.yield_until >= 0 ? RL_NOT_ACQUIRED
                                : rl_acquire_try(l, &a, wait_ms != 0, &wait_hint, err);
        if (st == RL_NOT_ACQUIRED && wait_ms != 0) {
            int64_t wait_start_us = rl_now_us();
            rl_metrics_wait_begins(&c->metrics);
            st = wait_and_retry(l, &a, wait_ms < 0 ? -1 : start + wait_ms, wait_hint, o->hook,
                                o->hook_userdata, err);
            rl_metrics_wait_ends(&c->metrics, (uint64_t)(rl_now_us() - wait_start_us));
        }
        st = rl_acquire_end(l, context, &a, o, st, err);
    }
    rl_client_leave(c);
    return st;
}

/* Drops one local hold of a lost or released lock. */
static void drop_one(rl_client *c, rl_hold *h) {
    if (--h->count <= 0) rl_holds_remove(&c->holds, h);
}

/* Whether another local hold of this context counts in the same Redis field (a context using
 * the reentrant, fenced and fair kinds on one name): Redis then counts them together. */
static int field_shared(rl_client *c, const rl_hold *h) {
    for (int kind = RL_LOCK_REENTRANT; kind <= RL_LOCK_WRITE; kind++) {
        if (kind == (int)h->kind || (kind == RL_LOCK_WRITE) != (h->kind == RL_LOCK_WRITE)) continue;
        rl_hold *other =
            rl_holds_find(&c->holds, h->name, h->name_len, (rl_lock_kind)kind, h->context);
        if (other && other->count > 0) return 1;
    }
    return 0;
}

/* Removes every count of h's owner from Redis (client mutex held; dropped for the network).
 * Returns how many releases Redis answered "still held". */
static int release_fully(rl_lock *l, rl_hold *h) {
    rl_client *c = l->client;
    int64_t lease = rl_hold_lease(c, h);
    char field[RL_OWNER_MAX];
    size_t field_len = rl_hold_owner(&c->holds, h, field);
    pthread_mutex_unlock(&c->mu);
    int still_held = 0;
    rl_error ignored;
    rl_lock_call_release_fully(l, field, field_len, lease, &still_held, &ignored);
    pthread_mutex_lock(&c->mu);
    return still_held;
}

/* The last local hold was released and Redis answered "still held": it counts more holds of
 * this owner than this client knows (an acquire whose answer was lost on the network). Left
 * alone, they would shut every other owner out for as long as this context keeps using the
 * lock. Remove them, and say so. */
static void release_stray_holds(rl_lock *l, rl_hold *h) {
    rl_client *c = l->client;
    int still_held = release_fully(l, h);
    char message[240], shown[RL_NAME_SHOWN_MAX];
    snprintf(message, sizeof message,
             "lock \"%s\": Redis held %d more hold(s) of this owner than this client knew (an "
             "acquire whose answer was lost); released them",
             printable(l, shown), still_held + 1);
    rl_events_push(&c->events, RL_EVENT_STRAY_HOLDS, l->name, l->name_len, h->context, RL_LOST_NONE,
                   (size_t)still_held + 1, message);
}

/* Release of a hold already lost: nothing to renew, but when the loss came from this side
 * (max_hold, or Redis unreachable until the lease ran out) the key may still be this owner's:
 * it is freed now instead of blocking others until it expires. */
static rl_status release_lost(rl_lock *l, rl_hold *h, rl_error *err) {
    rl_client *c = l->client;
    char shown[RL_NAME_SHOWN_MAX];
    rl_lost_reason reason = h->lost;
    if (!h->freed && (reason == RL_LOST_MAX_HOLD || reason == RL_LOST_UNREACHABLE)) {
        h->freed = 1;
        release_fully(l, h);
    }
    h->releasing = 0;
    drop_one(c, h);
    return rl_fail_lost(err, reason, " while held", printable(l, shown));
}

/* What Redis answered to a release of h (client mutex held). */
static rl_status apply_release(rl_lock *l, rl_hold *h, const redisReply *reply, int settling,
                               int64_t messages_before, rl_error *err) {
    rl_client *c = l->client;
    char shown[RL_NAME_SHOWN_MAX];
    if (reply->type == REDIS_REPLY_NIL) {
        if (settling && h->count <= 1) { /* already released, its latch expired since */
            rl_holds_remove(&c->holds, h);
            return RL_OK;
        }
        rl_lost_reason reason =
            rl_now_ms() >= h->confirmed_until ? RL_LOST_EXPIRED : RL_LOST_DELETED;
        rl_client_hold_lost(c, h, reason);
        h->releasing = 0;
        drop_one(c, h);
        return rl_fail_lost(err, reason, " while held", printable(l, shown));
    }
    if (reply->type != REDIS_REPLY_INTEGER) {
        h->releasing = 0;
        rl_fail(err, RL_ERR_SERVER, "unexpected answer to release (type %d)", reply->type);
        if (err) err->hold_kept = 1;
        return RL_ERR_SERVER;
    }
    free(h->retry_id);
    h->retry_id = NULL;
    int was_failed = h->release_failed;
    h->release_failed = 0;
    if (reply->integer == 2 && c->cfg.options.handover_grace_ms > 0) /* and it woke someone */
        rl_handovers_note(&c->handovers, l->name, l->name_len, l->kind,
                          rl_now_ms() + c->cfg.options.handover_grace_ms,
                          messages_before >= 0 ? (uint64_t)messages_before + 1 : 0);
    if (h->count <= 1) {
        if (reply->integer == 0 && !field_shared(c, h)) release_stray_holds(l, h);
        rl_holds_remove(&c->holds, h); /* no hold of this context is left */
        return RL_OK;
    }
    h->count--;
    h->releasing = 0;
    if (reply->integer >= 1) {
        /* Redis had no other hold of this owner: the ones this client still counts are gone. */
        rl_client_hold_lost(c, h, RL_LOST_DELETED);
    } else if (was_failed && h->watchdog) { /* a retried release went through: renew the rest */
        rl_watchdog_watch(c, h);
    }
    return RL_OK;
}

/* Before a release that may wake a waiter of this very client: the messages this client's
 * subscription of the lock's channel has read, so that a re-acquire that gives way (wake_grace.c)
 * tells this release's own message from the woken waiter's. -1 when this client waits on no
 * channel (the uncontended cycle pays one count) or not on this one. */
static int64_t messages_before_release(rl_lock *l, const char *owner, size_t owner_len) {
    rl_client *c = l->client;
    if (c->cfg.options.handover_grace_ms <= 0 || rl_wait_subscriptions(c) == 0) return -1;
    size_t len;
    char *channel = rl_lock_wait_channel(l, owner, owner_len, &len);
    int64_t n = channel ? rl_wait_messages_read(c, channel, len) : -1;
    free(channel);
    return n;
}

/* Releases one hold of h in Redis and updates the local table (client mutex held; dropped for
 * the network). `settling`: an acquire settles this context's failed release. h may be freed. */
static rl_status release_one(rl_lock *l, rl_hold *h, int settling, rl_error *err) {
    rl_client *c = l->client;
    char request_id[2 * RL_REQUEST_ID_BYTES + 1];
    h->releasing = 1;
    rl_watchdog_wait_out_round(c, h); /* no renewal of this hold may follow the release */
    if (h->lost) return release_lost(l, h, err);
    int retried = h->retry_id != NULL;
    if (retried)
        memcpy(request_id, h->retry_id, sizeof request_id);
    else
        rl_random_hex(request_id, RL_REQUEST_ID_BYTES);
    int64_t lease = rl_hold_lease(c, h);
    char field[RL_OWNER_MAX];
    size_t field_len = rl_hold_owner(&c->holds, h, field);
    pthread_mutex_unlock(&c->mu);

    int64_t messages_before = messages_before_release(l, field, field_len);
    redisReply *reply = NULL;
    rl_status st =
        rl_lock_call_release(l, field, field_len, lease, request_id, retried, 1, &reply, err);
    if (st == RL_ERR_REPLICA) { /* released on the master all the same */
        report_unsynced(l, "release", err);
        rl_error_clear(err);
        st = RL_OK;
    }

    pthread_mutex_lock(&c->mu);
    if (st != RL_OK) {
        /* Stop renewing now, whatever Redis did: the key then expires within one lease. The
         * request id is kept so that the next release (or acquire) of this context retries this
         * same release (out of memory, the retry gets a new id: a release already done then
         * answers "lost"). */
        if (!h->retry_id && (h->retry_id = malloc(sizeof request_id)))
            memcpy(h->retry_id, request_id, sizeof request_id);
        h->release_failed = 1;
        h->releasing = 0;
        rl_holds_unwatch(&c->holds, h);
        if (err) err->hold_kept = 1;
        return st;
    }
    st = apply_release(l, h, reply, settling, messages_before, err);
    freeReplyObject(reply);
    return st;
}

rl_status rl_lock_release(rl_lock *l, uint64_t context, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    char shown[RL_NAME_SHOWN_MAX];
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, l->kind, context);
    if (!h || h->count <= 0)
        st = rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context",
                     printable(l, shown));
    else
        st = release_one(l, h, 0, err);
    pthread_mutex_unlock(&c->mu);
    rl_client_leave(c);
    return st;
}

rl_status rl_lock_force_unlock(rl_lock *l, int *deleted, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    int was_held = 0;
    st = rl_lock_call_force_unlock(l, &was_held, err);
    if (st == RL_ERR_REPLICA) { /* deleted on the master all the same */
        report_unsynced(l, "force unlock", err);
        rl_error_clear(err);
        st = RL_OK;
    }
    if (st == RL_OK && deleted) *deleted = was_held;
    rl_client_leave(l->client);
    return st;
}

/* What a query asks about, after the lock key. */
enum query_field { NO_FIELD, OWNER_FIELD, MODE_FIELD };

/* One read-only command about the lock key: cmd name [the context's field | "mode"]. */
static rl_status query(rl_lock *l, const char *cmd, uint64_t context, enum query_field what,
                       redisReply **reply, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    char owner[RL_OWNER_MAX], field[RL_OWNER_MAX] = "mode";
    const char *argv[3] = {cmd, l->name, field};
    size_t lens[3] = {strlen(cmd), l->name_len, 4};
    if (what == OWNER_FIELD)
        lens[2] = rl_lock_field(l, owner, rl_client_owner(l->client, context, owner), field);
    st = rl_client_command(l->client, what == NO_FIELD ? 2 : 3, argv, lens, reply, err);
    rl_client_leave(l->client);
    return st;
}

static rl_status integer_query(rl_lock *l, const char *cmd, uint64_t context, enum query_field what,
                               int64_t *out, rl_error *err) {
    redisReply *reply = NULL;
    rl_status st = query(l, cmd, context, what, &reply, err);
    if (st != RL_OK) return st;
    if (reply->type == REDIS_REPLY_INTEGER)
        *out = reply->integer;
    else if (reply->type == REDIS_REPLY_NIL)
        *out = 0;
    else if (reply->type == REDIS_REPLY_STRING)
        *out = strtoll(reply->str, NULL, 10);
    else
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to %s (type %d)", cmd, reply->type);
    freeReplyObject(reply);
    return st;
}

static rl_status is_in_mode(rl_lock *l, int64_t *out, rl_error *err) {
    /* Each side of a read/write lock is locked when the lock is in its mode. */
    redisReply *reply = NULL;
    rl_status st = query(l, "HGET", 0, MODE_FIELD, &reply, err);
    if (st != RL_OK) return st;
    const char *mode = l->kind == RL_LOCK_READ ? "read" : "write";
    *out = reply->type == REDIS_REPLY_STRING && strcmp(reply->str, mode) == 0;
    freeReplyObject(reply);
    return RL_OK;
}

rl_status rl_lock_query(rl_lock *l, rl_query what, uint64_t context, int64_t *out, rl_error *err) {
    int64_t n = 0;
    rl_status st;
    switch (what) {
    case RL_QUERY_LOCKED:
        if (l && (l->kind == RL_LOCK_READ || l->kind == RL_LOCK_WRITE)) {
            st = is_in_mode(l, &n, err);
        } else {
            st = integer_query(l, "EXISTS", 0, NO_FIELD, &n, err);
            n = n > 0;
        }
        break;
    case RL_QUERY_HELD:
        st = integer_query(l, "HEXISTS", context, OWNER_FIELD, &n, err);
        n = n > 0;
        break;
    case RL_QUERY_HOLD_COUNT:
        st = integer_query(l, "HGET", context, OWNER_FIELD, &n, err);
        break;
    case RL_QUERY_REMAINING:
        st = integer_query(l, "PTTL", 0, NO_FIELD, &n, err);
        break;
    default:
        return rl_fail(err, RL_ERR_ARGUMENT, "unknown query %d", (int)what);
    }
    if (st == RL_OK && out) *out = n;
    return st;
}

rl_status rl_lock_is_locked(rl_lock *l, int *locked, rl_error *err) {
    int64_t n = 0;
    rl_status st = rl_lock_query(l, RL_QUERY_LOCKED, 0, &n, err);
    if (st == RL_OK && locked) *locked = (int)n;
    return st;
}

rl_status rl_lock_is_held(rl_lock *l, uint64_t context, int *held, rl_error *err) {
    int64_t n = 0;
    rl_status st = rl_lock_query(l, RL_QUERY_HELD, context, &n, err);
    if (st == RL_OK && held) *held = (int)n;
    return st;
}

rl_status rl_lock_hold_count(rl_lock *l, uint64_t context, int64_t *count, rl_error *err) {
    return rl_lock_query(l, RL_QUERY_HOLD_COUNT, context, count, err);
}

rl_status rl_lock_remaining(rl_lock *l, int64_t *pttl_ms, rl_error *err) {
    return rl_lock_query(l, RL_QUERY_REMAINING, 0, pttl_ms, err);
}

/* Local state: the hold of (lock, context) under the client mutex. */
static rl_hold *local_hold(rl_lock *l, uint64_t context) {
    return rl_holds_find(&l->client->holds, l->name, l->name_len, l->kind, context);
}

int64_t rl_lock_local_holds(rl_lock *l, uint64_t context) {
    if (!l || rl_client_enter(l->client, NULL) != RL_OK) return 0;
    pthread_mutex_lock(&l->client->mu);
    rl_hold *h = local_hold(l, context);
    int64_t n = h ? h->count : 0;
    pthread_mutex_unlock(&l->client->mu);
    rl_client_leave(l->client);
    return n;
}

int64_t rl_lock_token(rl_lock *l, uint64_t context) {
    if (!l || rl_client_enter(l->client, NULL) != RL_OK) return 0;
    pthread_mutex_lock(&l->client->mu);
    rl_hold *h = local_hold(l, context);
    int64_t token = h && h->count > 0 && !h->lost ? h->token : 0;
    pthread_mutex_unlock(&l->client->mu);
    rl_client_leave(l->client);
    return token;
}

rl_hold_state rl_lock_state(rl_lock *l, uint64_t context, int64_t *valid_until_ms) {
    int64_t until = 0;
    rl_hold_state state = RL_HOLD_NONE;
    if (l && rl_client_enter(l->client, NULL) == RL_OK) {
        pthread_mutex_lock(&l->client->mu);
        state = rl_hold_state_at(l->client, local_hold(l, context), rl_now_ms(), &until);
        pthread_mutex_unlock(&l->client->mu);
        rl_client_leave(l->client);
    }
    if (valid_until_ms) *valid_until_ms = until;
    return state;
}

int64_t rl_lock_valid_until(rl_lock *l, uint64_t context) {
    int64_t until;
    rl_lock_state(l, context, &until);
    return until;
}

rl_status rl_lock_check(rl_lock *l, uint64_t context, int64_t min_left_ms, int64_t *valid_for_ms,
                        rl_error *err) {
    rl_error_clear(err);
    if (valid_for_ms) *valid_for_ms = 0;
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    if (min_left_ms < 0) return rl_fail(err, RL_ERR_ARGUMENT, "min_left must be >= 0");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    char shown[RL_NAME_SHOWN_MAX];
    int64_t now = rl_now_ms(), until;
    pthread_mutex_lock(&l->client->mu);
    rl_hold *h = local_hold(l, context);
    rl_hold_state state = rl_hold_state_at(l->client, h, now, &until);
    rl_lost_reason reason = h && h->lost ? h->lost : RL_LOST_EXPIRED;
    pthread_mutex_unlock(&l->client->mu);
    rl_client_leave(l->client);
    int64_t left = until > now ? until - now : 0;
    if (valid_for_ms) *valid_for_ms = left;
    if (state == RL_HOLD_NONE)
        return rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context",
                       printable(l, shown));
    if (state == RL_HOLD_LOST) return rl_fail_lost(err, reason, "", printable(l, shown));
    if (state == RL_HOLD_IN_DOUBT)
        return rl_fail(err, RL_IN_DOUBT,
                       "the hold of lock \"%s\" is in doubt (a renewal failed or is late): "
                       "guaranteed for %lld ms more at most",
                       printable(l, shown), (long long)left);
    if (left < min_left_ms)
        return rl_fail(err, RL_IN_DOUBT,
                       "the hold of lock \"%s\" is guaranteed for %lld ms more, less than the "
                       "%lld ms asked",
                       printable(l, shown), (long long)left, (long long)min_left_ms);
    return RL_OK;
}

int64_t rl_monotonic_ms(void) {
    return rl_now_ms();
}

int rl_lock_lost(rl_lock *l, uint64_t context, rl_lost_reason *reason) {
    if (reason) *reason = RL_LOST_NONE;
    if (!l || rl_client_enter(l->client, NULL) != RL_OK) return 0;
    pthread_mutex_lock(&l->client->mu);
    rl_hold *h = local_hold(l, context);
    rl_lost_reason r = h ? h->lost : RL_LOST_NONE;
    pthread_mutex_unlock(&l->client->mu);
    rl_client_leave(l->client);
    if (reason) *reason = r;
    return r != RL_LOST_NONE;
}
