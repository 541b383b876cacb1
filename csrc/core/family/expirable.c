/* Redisson's RPermitExpirableSemaphore: STRING `name` = the free permits; ZSET
 * suffix(name, "timeout"): each permit taken (its id, 16 raw bytes) scored with the epoch ms at
 * which it expires; waiters listen on prefix("redisson_sc", name) (docs/protocol.md). Every
 * script first takes expired permits back into the pool. Dates come from Redis's clock (TIME),
 * not the client's. A permit acquired with RL_LEASE_WATCHDOG is kept in the client's hold table
 * (RL_HOLD_PERMIT) and renewed by the watchdog with the locks (watchdog.c's renewal script). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "family.h"
#include "random.h"
#include "validity.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* now: Redis's clock, in epoch ms. */
#define NOW                                                                                      \
    "local t = redis.call('time')\n"                                                             \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
/* Expired permits (date <= now), at most `limit` of them (-1: all), go back to the pool; the new
 * count is published when it is above 0. */
#define RECLAIM(zset, name, channel, limit, publish)                                             \
    "local expired = redis.call('zrangebyscore', " zset ", 0, now, 'limit', 0, " limit ")\n"     \
    "if #expired > 0 then\n"                                                                     \
    "  redis.call('zrem', " zset ", unpack(expired))\n"                                          \
    "  local value = redis.call('incrby', " name ", #expired)\n"                                 \
    "  if value > 0 then redis.call(" publish ", " channel ", value) end\n"                      \
    "end\n"
/* The date of a permit taken for `lease` ms. */
#define DATE(lease) "string.format('%.0f', now + tonumber(" lease "))"

/* KEYS: name, timeout, channel. ARGV: lease, publish command, permit id. Status ACQUIRED, else
 * the ms until the first permit expires (-1: none will) */
const char rl_lua_permit_acquire[] =
    NOW
    RECLAIM("KEYS[2]", "KEYS[1]", "KEYS[3]", "1", "ARGV[2]")
    "local value = redis.call('get', KEYS[1])\n"
    "if value ~= false and tonumber(value) >= 1 then\n"
    "  redis.call('decrby', KEYS[1], 1)\n"
    "  redis.call('zadd', KEYS[2], " DATE("ARGV[1]") ", ARGV[3])\n"
    "  local ttl = redis.call('pttl', KEYS[1])\n"
    "  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end\n"
    "  return redis.status_reply('ACQUIRED')\n"
    "end\n"
    "local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')\n"
    "if first[1] ~= nil and first[2] ~= '" "922337203685477" "' then\n"
    "  return math.max(tonumber(first[2]) - now, 0)\n"
    "end\n"
    "return -1\n";

/* KEYS: name, channel, timeout. ARGV: permit id, publish command. 1 released, 0 not held, 2 it
 * had expired (released now all the same) */
const char rl_lua_permit_release[] =
    NOW
    "local date = redis.call('zscore', KEYS[3], ARGV[1])\n"
    "if date == false then return 0 end\n"
    "redis.call('zrem', KEYS[3], ARGV[1])\n"
    "local value = redis.call('incrby', KEYS[1], 1)\n"
    "redis.call(ARGV[2], KEYS[2], value)\n"
    "if tonumber(date) <= now then return 2 end\n"
    "return 1\n";

/* KEYS: name, timeout, channel. ARGV: permit id, lease, publish command. 1 updated, 0 not held */
const char rl_lua_permit_update_lease[] =
    NOW
    RECLAIM("KEYS[2]", "KEYS[1]", "KEYS[3]", "-1", "ARGV[3]")
    "if redis.call('zscore', KEYS[2], ARGV[1]) == false then return 0 end\n"
    "redis.call('zadd', KEYS[2], " DATE("ARGV[2]") ", ARGV[1])\n"
    "return 1\n";

/* KEYS: name, timeout, channel. ARGV: publish command. The free permits */
const char rl_lua_permit_available[] =
    NOW
    RECLAIM("KEYS[2]", "KEYS[1]", "KEYS[3]", "-1", "ARGV[1]")
    "return tonumber(redis.call('get', KEYS[1]) or '0')\n";

/* KEYS: name, channel. ARGV: delta, publish command. The new count; a positive delta is
 * published */
const char rl_lua_permit_add[] =
    "local value = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])\n"
    "redis.call('set', KEYS[1], string.format('%.0f', value))\n"
    "if tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end\n"
    "return value\n";
/* clang-format on */

struct rl_expirable {
    rl_named o; /* aux: the timeout ZSET */
};

#define PERMIT_BYTES (RL_PERMIT_ID_LEN / 2)
#define MIN_HINT_MS 5 /* an expired permit not yet taken back: look again soon, not at once */

/* suffix(name, "timeout"): "{name}:timeout", or name + ":timeout" when the name has a '{'. */
static char *timeout_key(const char *name, size_t name_len, size_t *len) {
    int tagged = memchr(name, '{', name_len) != NULL;
    *len = name_len + (tagged ? 0 : 2) + 8;
    char *key = malloc(*len + 1), *p = key;
    if (!key) return NULL;
    if (!tagged) *p++ = '{';
    memcpy(p, name, name_len), p += name_len;
    if (!tagged) *p++ = '}';
    memcpy(p, ":timeout", 9);
    return key;
}

rl_status rl_expirable_new(rl_client *c, const void *name, size_t name_len, rl_expirable **out,
                           rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    rl_expirable *s = calloc(1, sizeof *s);
    if (!s) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = rl_named_init(&s->o, c, "semaphore", name, name_len, err);
    if (st == RL_OK) {
        s->o.channel = rl_name_prefixed("redisson_sc", name, name_len, 0, &s->o.channel_len);
        s->o.aux = timeout_key(name, name_len, &s->o.aux_len);
        if (!s->o.channel || !s->o.aux) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    if (st != RL_OK) {
        rl_expirable_free(s);
        return st;
    }
    *out = s;
    return RL_OK;
}

void rl_expirable_free(rl_expirable *s) {
    if (!s) return;
    rl_named_destroy(&s->o);
    free(s);
}

const char *rl_expirable_name(const rl_expirable *s, size_t *len) {
    if (len) *len = s ? s->o.name_len : 0;
    return s ? s->o.name : NULL;
}

static rl_status enter(rl_expirable *s, rl_error *err) {
    rl_error_clear(err);
    if (!s) return rl_fail(err, RL_ERR_ARGUMENT, "semaphore must not be NULL");
    return rl_client_enter(s->o.client, err);
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A permit id: hex (lowercased into hex) and its raw bytes, as stored in the ZSET. */
static rl_status parse_id(const char *id, char hex[RL_PERMIT_ID_LEN + 1],
                          unsigned char raw[PERMIT_BYTES], rl_error *err) {
    size_t len = id ? strnlen(id, RL_PERMIT_ID_LEN + 1) : 0;
    for (size_t i = 0; id && len == RL_PERMIT_ID_LEN && i < PERMIT_BYTES; i++) {
        int hi = hex_value(id[2 * i]), lo = hex_value(id[2 * i + 1]);
        if (hi < 0 || lo < 0) break;
        raw[i] = (unsigned char)(hi << 4 | lo);
        if (i == PERMIT_BYTES - 1) {
            for (size_t k = 0; k < RL_PERMIT_ID_LEN; k++)
                hex[k] = "0123456789abcdef"[hex_value(id[k])];
            hex[RL_PERMIT_ID_LEN] = '\0';
            return RL_OK;
        }
    }
    return rl_fail(err, RL_ERR_ARGUMENT, "a permit id is %d hex digits", RL_PERMIT_ID_LEN);
}

rl_status rl_expirable_try_set_permits(rl_expirable *s, int64_t permits, int *set, rl_error *err) {
    rl_status st = rl_check_permits(permits, 0, "permits", err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    st = rl_named_set_permits(&s->o, RL_SCRIPT_SEM_TRY_SET, permits, set, err);
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_expirable_add_permits(rl_expirable *s, int64_t delta, rl_error *err) {
    rl_status st = rl_check_permits(delta, -RL_MAX_PERMITS, "delta", err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    st = rl_named_set_permits(&s->o, RL_SCRIPT_PERMIT_ADD, delta, NULL, err);
    rl_client_leave(s->o.client);
    return st;
}

/* The release script for the permit `raw`; *answer as the script's. */
static rl_status release_raw(rl_expirable *s, const unsigned char raw[PERMIT_BYTES],
                             int64_t *answer, rl_error *err) {
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len),
                     rl_arg_bytes(s->o.channel, s->o.channel_len),
                     rl_arg_bytes(s->o.aux, s->o.aux_len), rl_arg_bytes(raw, PERMIT_BYTES),
                     rl_arg_str(RL_PUBLISH)};
    redisReply *reply = NULL;
    rl_status st = rl_named_write(&s->o, RL_SCRIPT_PERMIT_RELEASE, 3, args, 5, &reply, err);
    if (st != RL_OK) return st;
    st = rl_named_integer(&s->o, reply, "release", answer, err);
    freeReplyObject(reply);
    return st;
}

static int reply_is_acquired(const redisReply *r) {
    return r->type == REDIS_REPLY_STATUS && r->len == 8 && memcmp(r->str, "ACQUIRED", 8) == 0;
}

typedef struct acquire_try {
    rl_expirable *s;
    int64_t lease; /* ms sent */
    unsigned char raw[PERMIT_BYTES];
    int64_t sent_at;
} acquire_try;

static rl_status try_acquire(void *arg, int64_t *hint_ms, rl_error *err) {
    acquire_try *t = arg;
    rl_expirable *s = t->s;
    char lease[24];
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len),
                     rl_arg_bytes(s->o.aux, s->o.aux_len),
                     rl_arg_bytes(s->o.channel, s->o.channel_len),
                     rl_arg_num(lease, t->lease),
                     rl_arg_str(RL_PUBLISH),
                     rl_arg_bytes(t->raw, PERMIT_BYTES)};
    redisReply *reply = NULL;
    t->sent_at = rl_now_ms();
    rl_status st = rl_named_run(&s->o, RL_SCRIPT_PERMIT_ACQUIRE, 3, args, 6, 0, reply_is_acquired,
                                &reply, err);
    if (st == RL_ERR_REPLICA) { /* taken on the master only: give it back */
        freeReplyObject(reply);
        int64_t ignored_answer;
        rl_error ignored;
        release_raw(s, t->raw, &ignored_answer, &ignored);
        return st;
    }
    if (st != RL_OK) return st;
    if (reply_is_acquired(reply)) {
        st = RL_OK;
    } else if (reply->type == REDIS_REPLY_INTEGER) {
        /* Nobody publishes when a permit expires: look again when the first one does. */
        *hint_ms = reply->integer < 0 ? -1 : reply->integer + MIN_HINT_MS;
        st = RL_NOT_ACQUIRED;
    } else {
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to a permit acquire (type %d)",
                     reply->type);
    }
    freeReplyObject(reply);
    return st;
}

/* A permit acquired in watchdog mode: into the hold table and onto the watchdog's list, in one
 * critical section. */
static rl_status watch_permit(rl_expirable *s, const char *hex, const acquire_try *t,
                              rl_error *err) {
    rl_client *c = s->o.client;
    rl_status st = RL_OK;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_add(&c->holds, s->o.name, s->o.name_len, RL_HOLD_PERMIT, 0, hex, s->o.aux,
                              s->o.aux_len);
    if (!h) {
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory recording a permit");
    } else {
        h->count = 1;
        h->watchdog = 1;
        rl_hold_confirmed(c, h, t->sent_at, t->lease);
        int watch = rl_watchdog_watch(c, h);
        if (watch != RL_WATCH_OK) {
            rl_holds_remove(&c->holds, h);
            st = watch == RL_WATCH_STOPPED
                     ? rl_fail(err, RL_ERR_CLOSED, "the client is closed")
                     : rl_fail(err, RL_ERR_MEMORY, "cannot start the watchdog thread");
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

rl_status rl_expirable_acquire(rl_expirable *s, int64_t lease_ms, int64_t wait_ms,
                               rl_wait_hook hook, void *hook_userdata,
                               char id[RL_PERMIT_ID_LEN + 1], rl_error *err) {
    rl_status st = RL_OK;
    if (!id) st = rl_fail(err, RL_ERR_ARGUMENT, "id must not be NULL");
    if (st == RL_OK &&
        ((lease_ms <= 0 && lease_ms != RL_LEASE_WATCHDOG) || lease_ms > RL_MAX_LEASE_MS))
        st = rl_fail(err, RL_ERR_ARGUMENT,
                     "a permit's lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    if (st == RL_OK) st = rl_check_wait(wait_ms, err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    rl_client *c = s->o.client;
    char hex[RL_PERMIT_ID_LEN + 1];
    acquire_try t = {.s = s};
    t.lease = lease_ms > 0 ? lease_ms : c->cfg.options.watchdog_timeout_ms;
    rl_random_hex(hex, PERMIT_BYTES);
    parse_id(hex, hex, t.raw, NULL);
    st = rl_wait_for(c, s->o.channel, s->o.channel_len, 0, try_acquire, &t, wait_ms, hook,
                     hook_userdata, err);
    if (st == RL_OK && lease_ms == RL_LEASE_WATCHDOG &&
        (st = watch_permit(s, hex, &t, err)) != RL_OK) {
        int64_t ignored_answer; /* not renewed, the caller told "failed": give it back */
        rl_error ignored;
        release_raw(s, t.raw, &ignored_answer, &ignored);
    }
    if (st == RL_OK)
        memcpy(id, hex, sizeof hex);
    else if (st == RL_NOT_ACQUIRED)
        rl_named_not_free(&s->o, 1, wait_ms, err);
    rl_client_leave(c);
    return st;
}

/* Takes a renewed permit off the watchdog's list and out of the table (client mutex taken here):
 * no renewal follows. Answers how it was lost while held (RL_LOST_NONE: it was not), and -1
 * when this client does not renew it. */
static int unwatch_permit(rl_expirable *s, const char *hex) {
    rl_client *c = s->o.client;
    int lost = -1;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find_owner(&c->holds, s->o.name, s->o.name_len, RL_HOLD_PERMIT, 0, hex);
    if (h && !h->releasing) {
        h->releasing = 1;
        rl_watchdog_wait_out_round(c, h);
        lost = (int)h->lost;
        rl_holds_remove(&c->holds, h);
    }
    pthread_mutex_unlock(&c->mu);
    return lost;
}

static rl_status permit_lost(rl_expirable *s, const char *hex, rl_lost_reason reason,
                             rl_error *err) {
    char shown[RL_NAME_SHOWN_MAX];
    rl_fail(err, RL_LOST, "permit %s of semaphore \"%s\" was lost while held (%s)", hex,
            rl_named_shown(&s->o, shown), rl_lost_reason_name(reason));
    if (err) err->lost_reason = reason;
    return RL_LOST;
}

rl_status rl_expirable_release(rl_expirable *s, const char *id, rl_error *err) {
    char hex[RL_PERMIT_ID_LEN + 1], shown[RL_NAME_SHOWN_MAX];
    unsigned char raw[PERMIT_BYTES];
    rl_status st = parse_id(id, hex, raw, err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    int lost = unwatch_permit(s, hex);
    int64_t answer = 0;
    st = release_raw(s, raw, &answer, err);
    if (st == RL_OK) {
        if (lost > 0)
            st = permit_lost(s, hex, (rl_lost_reason)lost, err);
        else if (answer == 2)
            st = permit_lost(s, hex, RL_LOST_EXPIRED, err);
        else if (answer != 1)
            st = rl_fail(err, RL_NOT_OWNED,
                         "semaphore \"%s\" has no permit %s (never acquired, already released, "
                         "or expired and taken back)",
                         rl_named_shown(&s->o, shown), hex);
    }
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_expirable_update_lease(rl_expirable *s, const char *id, int64_t lease_ms,
                                    rl_error *err) {
    char hex[RL_PERMIT_ID_LEN + 1], shown[RL_NAME_SHOWN_MAX], lease[24];
    unsigned char raw[PERMIT_BYTES];
    rl_status st = parse_id(id, hex, raw, err);
    if (st == RL_OK && (lease_ms <= 0 || lease_ms > RL_MAX_LEASE_MS))
        st = rl_fail(err, RL_ERR_ARGUMENT, "a permit's lease must be from 1 ms to 2^40 ms");
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    unwatch_permit(s, hex); /* from now on its lease is the one given here */
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len),
                     rl_arg_bytes(s->o.aux, s->o.aux_len),
                     rl_arg_bytes(s->o.channel, s->o.channel_len),
                     rl_arg_bytes(raw, PERMIT_BYTES),
                     rl_arg_num(lease, lease_ms),
                     rl_arg_str(RL_PUBLISH)};
    redisReply *reply = NULL;
    st = rl_named_write(&s->o, RL_SCRIPT_PERMIT_UPDATE_LEASE, 3, args, 6, &reply, err);
    if (st == RL_OK) {
        int updated = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        if (!updated)
            st = rl_fail(err, RL_NOT_OWNED,
                         "semaphore \"%s\" has no permit %s (never acquired, already released, "
                         "or expired)",
                         rl_named_shown(&s->o, shown), hex);
    }
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_expirable_available(rl_expirable *s, int64_t *permits, rl_error *err) {
    rl_status st = enter(s, err);
    if (st != RL_OK) return st;
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len), rl_arg_bytes(s->o.aux, s->o.aux_len),
                     rl_arg_bytes(s->o.channel, s->o.channel_len), rl_arg_str(RL_PUBLISH)};
    redisReply *reply = NULL;
    int64_t n = 0;
    st = rl_named_write(&s->o, RL_SCRIPT_PERMIT_AVAILABLE, 3, args, 4, &reply, err);
    if (st == RL_OK) {
        st = rl_named_integer(&s->o, reply, "available", &n, err);
        freeReplyObject(reply);
    }
    if (st == RL_OK && permits) *permits = n;
    rl_client_leave(s->o.client);
    return st;
}

int rl_expirable_lost(rl_expirable *s, const char *id, rl_lost_reason *reason) {
    char hex[RL_PERMIT_ID_LEN + 1];
    unsigned char raw[PERMIT_BYTES];
    rl_lost_reason r = RL_LOST_NONE;
    if (s && parse_id(id, hex, raw, NULL) == RL_OK && rl_client_enter(s->o.client, NULL) == RL_OK) {
        rl_client *c = s->o.client;
        pthread_mutex_lock(&c->mu);
        rl_hold *h =
            rl_holds_find_owner(&c->holds, s->o.name, s->o.name_len, RL_HOLD_PERMIT, 0, hex);
        if (h) r = h->lost;
        pthread_mutex_unlock(&c->mu);
        rl_client_leave(c);
    }
    if (reason) *reason = r;
    return r != RL_LOST_NONE;
}

/* ---- async ------------------------------------------------------------------------------- */

typedef struct async_acquire {
    acquire_try t; /* first: the tries' arg */
    int watchdog;
    char hex[RL_PERMIT_ID_LEN + 1];
    char *id; /* the caller's, written on success */
} async_acquire;

/* A try; a permit it got in watchdog mode is watched at once (given back when it cannot be). */
static rl_status try_acquire_async(void *arg, int64_t *hint_ms, rl_error *err) {
    async_acquire *a = arg;
    rl_status st = try_acquire(&a->t, hint_ms, err);
    if (st == RL_OK && a->watchdog && (st = watch_permit(a->t.s, a->hex, &a->t, err)) != RL_OK) {
        int64_t ignored_answer;
        rl_error ignored;
        release_raw(a->t.s, a->t.raw, &ignored_answer, &ignored);
    }
    if (st == RL_OK) memcpy(a->id, a->hex, sizeof a->hex);
    return st;
}

static void undo_acquire(void *arg) { /* a permit taken after a cancel: released at once */
    async_acquire *a = arg;
    rl_error ignored;
    rl_expirable_release(a->t.s, a->hex, &ignored);
}

static void acquire_ran_out(void *arg, int64_t wait_ms, rl_error *err) {
    async_acquire *a = arg;
    rl_named_not_free(&a->t.s->o, 1, wait_ms, err);
}

rl_status rl_expirable_acquire_async(rl_expirable *s, int64_t lease_ms, int64_t wait_ms,
                                     char id[RL_PERMIT_ID_LEN + 1], rl_done_fn done, void *userdata,
                                     rl_call **out, rl_error *err) {
    static const rl_wait_steps steps = {try_acquire_async, undo_acquire, acquire_ran_out, free};
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!s || !id) return rl_fail(err, RL_ERR_ARGUMENT, "semaphore and id must not be NULL");
    if ((lease_ms <= 0 && lease_ms != RL_LEASE_WATCHDOG) || lease_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "a permit's lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    rl_status st = rl_check_wait(wait_ms, err);
    if (st != RL_OK) return st;
    async_acquire *a = calloc(1, sizeof *a);
    if (!a) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    a->t.s = s;
    a->t.lease = lease_ms > 0 ? lease_ms : s->o.client->cfg.options.watchdog_timeout_ms;
    a->watchdog = lease_ms == RL_LEASE_WATCHDOG;
    a->id = id;
    rl_random_hex(a->hex, PERMIT_BYTES);
    parse_id(a->hex, a->hex, a->t.raw, NULL);
    return rl_wait_for_async(s->o.client, s->o.channel, s->o.channel_len, 0, &steps, a, wait_ms,
                             done, userdata, out, err);
}
