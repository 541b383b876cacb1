/* The reentrant lock (Redisson RLock): acquire with waiting, release through the unlock latch,
 * force unlock and the server-side queries. The local hold table is updated in the same critical
 * section that reads each Redis answer, so renewal starts and stops exactly with the hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "error.h"
#include "names.h"
#include "random.h"

#define PUBLISH "publish"
#define UNLOCK_MESSAGE "0"

struct rl_lock {
    rl_client *client;
    char *name;
    size_t name_len;
    char *channel; /* prefix("redisson_lock__channel", name) */
    size_t channel_len;
    char *latch_prefix; /* prefix("redisson_unlock_latch", name) + ":" */
    size_t latch_prefix_len;
};

#define REQUEST_ID_BYTES 16 /* 32 hex chars */

void rl_lock_free(rl_lock *l) {
    if (!l) return;
    free(l->name);
    free(l->channel);
    free(l->latch_prefix);
    if (l->client) rl_client_unref(l->client);
    free(l);
}

rl_status rl_lock_new(rl_client *c, const void *name, size_t name_len, rl_lock **out,
                      rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!name || name_len == 0) return rl_fail(err, RL_ERR_ARGUMENT, "a lock name must not be empty");
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    rl_lock *l = calloc(1, sizeof *l);
    if (l) {
        l->name = malloc(name_len + 1);
        l->channel = rl_name_prefixed("redisson_lock__channel", name, name_len, 0, &l->channel_len);
        l->latch_prefix = rl_name_prefixed("redisson_unlock_latch", name, name_len, 1,
                                           &l->latch_prefix_len);
    }
    if (!l || !l->name || !l->channel || !l->latch_prefix) {
        rl_lock_free(l);
        rl_client_leave(c);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    memcpy(l->name, name, name_len);
    l->name[name_len] = '\0';
    l->name_len = name_len;
    l->latch_prefix[l->latch_prefix_len++] = ':';
    l->client = c;
    rl_client_ref(c);
    rl_client_leave(c);
    *out = l;
    return RL_OK;
}

const char *rl_lock_name(const rl_lock *l, size_t *len) {
    if (len) *len = l ? l->name_len : 0;
    return l ? l->name : NULL;
}

/* For messages: the name, cut short and with unprintable bytes as '?'. */
static const char *printable(const rl_lock *l, char out[RL_NAME_SHOWN_MAX]) {
    return rl_name_shown(l->name, l->name_len, out);
}

/* What counts as a write, for replica sync. */
static int reply_is_nil(const redisReply *r) { return r->type == REDIS_REPLY_NIL; }
static int reply_is_integer(const redisReply *r) { return r->type == REDIS_REPLY_INTEGER; }
static int reply_is_one(const redisReply *r) { return r->type == REDIS_REPLY_INTEGER && r->integer == 1; }

/* One call of the release script for `owner`, under the unlock latch of `request_id`: a retry
 * with the same id gets the first call's answer instead of releasing twice. */
static rl_status release_call(rl_lock *l, const char *owner, size_t owner_len, int64_t lease,
                              const char *request_id, rl_reply_test wrote, redisReply **reply,
                              rl_error *err) {
    rl_client *c = l->client;
    char lease_s[24], latch_ttl_s[24];
    size_t latch_len = l->latch_prefix_len + 2 * REQUEST_ID_BYTES;
    char *latch = malloc(latch_len); /* per call: threads may release through one lock at once */
    if (!latch) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    memcpy(latch, l->latch_prefix, l->latch_prefix_len);
    memcpy(latch + l->latch_prefix_len, request_id, 2 * REQUEST_ID_BYTES);
    const char *argv[11] = {NULL,     NULL,    "3",   l->name,     l->channel, latch,
                            UNLOCK_MESSAGE, lease_s, owner, latch_ttl_s, PUBLISH};
    size_t lens[11] = {0, 0, 1, l->name_len, l->channel_len, latch_len, 1,
                       (size_t)snprintf(lease_s, sizeof lease_s, "%lld", (long long)lease),
                       owner_len,
                       (size_t)snprintf(latch_ttl_s, sizeof latch_ttl_s, "%lld",
                                        (long long)c->cfg.options.latch_ttl_ms),
                       strlen(PUBLISH)};
    const char *del_argv[2] = {"DEL", latch};
    size_t del_lens[2] = {3, latch_len};
    rl_cmd delete_latch = {2, del_argv, del_lens};
    rl_status st = rl_client_script(c, RL_SCRIPT_RELEASE, 11, argv, lens, reply, 1, &delete_latch,
                                    wrote, err);
    free(latch);
    return st;
}

/* A write the replicas did not acknowledge, already done on the master: said as an event. */
static void report_unsynced(rl_lock *l, const char *what, const rl_error *why) {
    char message[400], shown[RL_NAME_SHOWN_MAX];
    snprintf(message, sizeof message, "%s of lock \"%s\": %s", what, printable(l, shown),
             why->message);
    rl_events_push(&l->client->events, RL_EVENT_SYNC_FAILED, l->name, l->name_len, 0, RL_LOST_NONE,
                   1, message);
}

/* An acquire the replicas did not acknowledge is taken back (one hold of `owner`), best effort:
 * if this fails too, the hold expires by its lease, never renewed. */
static void undo_acquire(rl_lock *l, const char *owner, size_t owner_len, int64_t lease) {
    char request_id[2 * REQUEST_ID_BYTES + 1];
    rl_random_hex(request_id, REQUEST_ID_BYTES);
    redisReply *reply = NULL;
    rl_error ignored;
    if (release_call(l, owner, owner_len, lease, request_id, NULL, &reply, &ignored) == RL_OK)
        freeReplyObject(reply);
}

/* One acquire attempt. RL_OK = acquired (at *sent_at); RL_NOT_ACQUIRED with the holder's PTTL. */
static rl_status try_once(rl_lock *l, const char *owner, size_t owner_len, int64_t lease,
                          int64_t *pttl, int64_t *sent_at, rl_error *err) {
    char lease_s[24];
    const char *argv[6] = {NULL, NULL, "1", l->name, lease_s, owner};
    size_t lens[6] = {0, 0, 1, l->name_len,
                      (size_t)snprintf(lease_s, sizeof lease_s, "%lld", (long long)lease), owner_len};
    redisReply *reply = NULL;
    *sent_at = rl_now_ms();
    rl_status st = rl_client_script(l->client, RL_SCRIPT_ACQUIRE, 6, argv, lens, &reply, 0, NULL,
                                    reply_is_nil, err);
    if (st == RL_ERR_REPLICA) {
        freeReplyObject(reply);
        undo_acquire(l, owner, owner_len, lease);
        return st;
    }
    if (st != RL_OK) return st;
    if (reply->type == REDIS_REPLY_NIL) st = RL_OK;
    else if (reply->type == REDIS_REPLY_INTEGER) {
        *pttl = reply->integer;
        st = RL_NOT_ACQUIRED;
    } else {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to acquire (type %d)", reply->type);
    }
    freeReplyObject(reply);
    return st;
}

/* Subscribe, try again, then sleep until a release message or the holder's lease end, and
 * repeat until acquired, the deadline, an abort or an error. */
static rl_status wait_and_retry(rl_lock *l, const char *owner, size_t owner_len, int64_t lease,
                                int64_t deadline, int64_t pttl, rl_wait_hook hook, void *hook_ud,
                                int64_t *sent_at, rl_error *err) {
    rl_subscriber *sub = &l->client->sub;
    rl_sub_ticket ticket;
    rl_status st = rl_sub_join(sub, l->channel, l->channel_len, &ticket, err);
    if (st != RL_OK) return st;
    for (;;) {
        int64_t now = rl_now_ms();
        if (deadline >= 0 && now >= deadline) {
            st = RL_NOT_ACQUIRED;
            break;
        }
        int64_t until = deadline;
        if (pttl >= 0 && (until < 0 || now + pttl < until)) until = now + pttl;
        st = rl_sub_wait(sub, &ticket, until, hook, hook_ud, err);
        if (st != RL_OK && st != RL_NOT_ACQUIRED) break; /* aborted, closed, unreachable */
        st = try_once(l, owner, owner_len, lease, &pttl, sent_at, err);
        if (st != RL_NOT_ACQUIRED) break;
    }
    rl_sub_leave(sub, &ticket);
    return st;
}

/* Records an acquired hold and, in watchdog mode, starts its renewal: in one critical section
 * with the answer, so there is no moment when the hold exists without its renewal. */
static rl_status record_hold(rl_lock *l, uint64_t context, const char *owner, int64_t lease_ms,
                             int64_t lease, int64_t max_hold_ms, int64_t sent_at, rl_error *err) {
    rl_client *c = l->client;
    rl_status st = RL_OK;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, context);
    if (!h) h = rl_holds_add(&c->holds, l->name, l->name_len, context, owner);
    if (!h) {
        /* Held in Redis but untracked: it expires by its lease, never renewed. */
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory recording a hold");
    } else {
        if (h->count == 0 && max_hold_ms > 0) h->renew_until = sent_at + max_hold_ms;
        h->count++;
        h->confirmed_until = sent_at + lease;
        if (lease_ms == RL_LEASE_WATCHDOG) h->watchdog = 1;
        else h->lease_ms = lease_ms;
        if (h->watchdog && !h->watched && !h->release_failed && rl_watchdog_watch(c, h) != 0) {
            /* Told "not acquired", the caller will not release: forget the hold locally and let
             * Redis expire it by its lease. */
            if (--h->count <= 0) rl_holds_remove(&c->holds, h);
            st = rl_fail(err, RL_ERR_MEMORY, "cannot start the watchdog thread");
        }
    }
    pthread_mutex_unlock(&c->mu);
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

rl_status rl_lock_acquire_with(rl_lock *l, uint64_t context, const rl_acquire_options *o,
                               rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    if (!o) return rl_fail(err, RL_ERR_ARGUMENT, "options must not be NULL");
    int64_t lease_ms = o->lease_ms, wait_ms = o->wait_ms;
    if ((lease_ms <= 0 && lease_ms != RL_LEASE_WATCHDOG) || lease_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    if (o->max_hold_ms < 0 && o->max_hold_ms != RL_MAX_HOLD_NONE)
        return rl_fail(err, RL_ERR_ARGUMENT, "max_hold must be > 0, 0 (the client's) or none");
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    char owner[RL_OWNER_MAX], shown[RL_NAME_SHOWN_MAX];
    size_t owner_len = rl_client_owner(c, context, owner);

    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, context);
    rl_lost_reason lost = h ? h->lost : RL_LOST_NONE;
    pthread_mutex_unlock(&c->mu);
    if (lost) {
        st = rl_fail_lost(err, lost, "; release it first", printable(l, shown));
        goto out;
    }

    int64_t lease = lease_ms > 0 ? lease_ms : c->cfg.options.watchdog_timeout_ms;
    int64_t start = rl_now_ms(), pttl = -1, sent_at = start;
    st = try_once(l, owner, owner_len, lease, &pttl, &sent_at, err);
    if (st == RL_NOT_ACQUIRED && wait_ms != 0)
        st = wait_and_retry(l, owner, owner_len, lease, wait_ms < 0 ? -1 : start + wait_ms, pttl,
                            o->hook, o->hook_userdata, &sent_at, err);
    int64_t max_hold = o->max_hold_ms == 0 ? c->cfg.options.max_hold_ms
                       : o->max_hold_ms > 0 ? o->max_hold_ms : 0;
    if (st == RL_OK) st = record_hold(l, context, owner, lease_ms, lease, max_hold, sent_at, err);
    else if (st == RL_NOT_ACQUIRED)
        rl_fail(err, RL_NOT_ACQUIRED, "lock \"%s\" is held by another owner", printable(l, shown));
out:
    rl_client_leave(c);
    return st;
}

/* Drops one local hold of a lost or released lock. */
static void drop_one(rl_client *c, rl_hold *h) {
    if (--h->count <= 0) rl_holds_remove(&c->holds, h);
}

rl_status rl_lock_release(rl_lock *l, uint64_t context, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_client *c = l->client;
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    char shown[RL_NAME_SHOWN_MAX], request_id[2 * REQUEST_ID_BYTES + 1];

    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, l->name, l->name_len, context);
    if (!h || h->count <= 0) {
        pthread_mutex_unlock(&c->mu);
        st = rl_fail(err, RL_NOT_OWNED, "lock \"%s\" is not held by this context", printable(l, shown));
        goto out;
    }
    h->releasing = 1;
    rl_watchdog_wait_out_round(c, h); /* no renewal of this hold may follow the release */
    if (h->lost) {
        rl_lost_reason reason = h->lost;
        h->releasing = 0;
        drop_one(c, h);
        pthread_mutex_unlock(&c->mu);
        st = rl_fail_lost(err, reason, " while held", printable(l, shown));
        goto out;
    }
    if (!h->request_id[0]) rl_random_hex(h->request_id, REQUEST_ID_BYTES);
    memcpy(request_id, h->request_id, sizeof request_id);
    int64_t lease = h->watchdog ? c->cfg.options.watchdog_timeout_ms : h->lease_ms;
    const char *owner = h->owner; /* immutable while this context holds the lock */
    size_t owner_len = h->owner_len;
    pthread_mutex_unlock(&c->mu);

    redisReply *reply = NULL;
    st = release_call(l, owner, owner_len, lease, request_id, reply_is_integer, &reply, err);
    if (st == RL_ERR_REPLICA) { /* released on the master all the same */
        report_unsynced(l, "release", err);
        rl_error_clear(err);
        st = RL_OK;
    }

    pthread_mutex_lock(&c->mu);
    h->releasing = 0;
    if (st != RL_OK) {
        /* Stop renewing now, whatever Redis did: the key then expires within one lease. The
         * request id stays so that calling release again retries this same release. */
        h->release_failed = 1;
        rl_holds_unwatch(&c->holds, h);
    } else if (reply->type == REDIS_REPLY_NIL) {
        rl_lost_reason reason = rl_now_ms() >= h->confirmed_until ? RL_LOST_EXPIRED : RL_LOST_DELETED;
        rl_client_hold_lost(c, h, reason);
        drop_one(c, h);
        st = rl_fail_lost(err, reason, " while held", printable(l, shown));
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        h->request_id[0] = '\0';
        if (reply->integer == 1 || h->count <= 1) {
            rl_holds_remove(&c->holds, h); /* no hold of this context is left */
        } else {
            h->count--;
            if (h->release_failed) { /* a retried release went through: renew what remains */
                h->release_failed = 0;
                if (h->watchdog) rl_watchdog_watch(c, h);
            }
        }
    } else {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to release (type %d)", reply->type);
    }
    pthread_mutex_unlock(&c->mu);
    freeReplyObject(reply);
out:
    rl_client_leave(c);
    return st;
}

rl_status rl_lock_force_unlock(rl_lock *l, int *deleted, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    const char *argv[7] = {NULL, NULL, "2", l->name, l->channel, UNLOCK_MESSAGE, PUBLISH};
    size_t lens[7] = {0, 0, 1, l->name_len, l->channel_len, 1, strlen(PUBLISH)};
    redisReply *reply = NULL;
    st = rl_client_script(l->client, RL_SCRIPT_FORCE_UNLOCK, 7, argv, lens, &reply, 0, NULL,
                          reply_is_one, err);
    if (st == RL_ERR_REPLICA) { /* deleted on the master all the same */
        report_unsynced(l, "force unlock", err);
        rl_error_clear(err);
        st = RL_OK;
    }
    if (st == RL_OK) {
        if (deleted) *deleted = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
    }
    rl_client_leave(l->client);
    return st;
}

/* One read-only command about the lock key: cmd name [owner]. */
static rl_status query(rl_lock *l, const char *cmd, uint64_t context, int with_owner,
                       redisReply **reply, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "lock must not be NULL");
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    char owner[RL_OWNER_MAX];
    const char *argv[3] = {cmd, l->name, owner};
    size_t lens[3] = {strlen(cmd), l->name_len, 0};
    if (with_owner) lens[2] = rl_client_owner(l->client, context, owner);
    st = rl_client_command(l->client, with_owner ? 3 : 2, argv, lens, reply, err);
    rl_client_leave(l->client);
    return st;
}

static rl_status integer_query(rl_lock *l, const char *cmd, uint64_t context, int with_owner,
                               int64_t *out, rl_error *err) {
    redisReply *reply = NULL;
    rl_status st = query(l, cmd, context, with_owner, &reply, err);
    if (st != RL_OK) return st;
    if (reply->type == REDIS_REPLY_INTEGER) *out = reply->integer;
    else if (reply->type == REDIS_REPLY_NIL) *out = 0;
    else if (reply->type == REDIS_REPLY_STRING) *out = strtoll(reply->str, NULL, 10);
    else st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to %s (type %d)", cmd, reply->type);
    freeReplyObject(reply);
    return st;
}

rl_status rl_lock_is_locked(rl_lock *l, int *locked, rl_error *err) {
    int64_t n = 0;
    rl_status st = integer_query(l, "EXISTS", 0, 0, &n, err);
    if (st == RL_OK && locked) *locked = n > 0;
    return st;
}

rl_status rl_lock_is_held(rl_lock *l, uint64_t context, int *held, rl_error *err) {
    int64_t n = 0;
    rl_status st = integer_query(l, "HEXISTS", context, 1, &n, err);
    if (st == RL_OK && held) *held = n > 0;
    return st;
}

rl_status rl_lock_hold_count(rl_lock *l, uint64_t context, int64_t *count, rl_error *err) {
    int64_t n = 0;
    rl_status st = integer_query(l, "HGET", context, 1, &n, err);
    if (st == RL_OK && count) *count = n;
    return st;
}

rl_status rl_lock_remaining(rl_lock *l, int64_t *pttl_ms, rl_error *err) {
    int64_t n = 0;
    rl_status st = integer_query(l, "PTTL", 0, 0, &n, err);
    if (st == RL_OK && pttl_ms) *pttl_ms = n;
    return st;
}

/* Local state: the hold of (lock, context) under the client mutex. */
static rl_hold *local_hold(rl_lock *l, uint64_t context) {
    return rl_holds_find(&l->client->holds, l->name, l->name_len, context);
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
