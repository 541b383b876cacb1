/* Redisson's RSemaphore: STRING `name` = the free permits; waiters listen on
 * prefix("redisson_sc", name), where every change publishes the new count (docs/protocol.md).
 * The permits this client took are counted in its hold table (RL_HOLD_SEMAPHORE), so that a
 * release of more than it holds is refused. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "family.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* KEYS: name, channel. ARGV: permits, publish command. 1 set, 0 it existed */
const char rl_lua_sem_try_set[] =
    "if redis.call('get', KEYS[1]) ~= false then return 0 end\n"
    "redis.call('set', KEYS[1], ARGV[1])\n"
    "redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "return 1\n";

/* KEYS: name, channel. ARGV: delta, publish command. The new count */
const char rl_lua_sem_add[] =
    "local value = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])\n"
    "redis.call('set', KEYS[1], string.format('%.0f', value))\n"
    "redis.call(ARGV[2], KEYS[2], string.format('%.0f', value))\n"
    "return value\n";

/* KEYS: name. ARGV: permits. 1 taken, 0 not enough free */
const char rl_lua_sem_acquire[] =
    "local value = redis.call('get', KEYS[1])\n"
    "if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then\n"
    "  redis.call('decrby', KEYS[1], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* KEYS: name, channel. ARGV: permits, publish command. The new count */
const char rl_lua_sem_release[] =
    "local value = redis.call('incrby', KEYS[1], ARGV[1])\n"
    "redis.call(ARGV[2], KEYS[2], value)\n"
    "return value\n";

/* KEYS: name. The permits taken (0 when none is free) */
const char rl_lua_sem_drain[] =
    "local value = tonumber(redis.call('get', KEYS[1]) or '0')\n"
    "if value <= 0 then return 0 end\n"
    "redis.call('set', KEYS[1], 0)\n"
    "return value\n";
/* clang-format on */

struct rl_semaphore {
    rl_named o;
};

rl_status rl_semaphore_new(rl_client *c, const void *name, size_t name_len, rl_semaphore **out,
                           rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    rl_semaphore *s = calloc(1, sizeof *s);
    if (!s) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = rl_named_init(&s->o, c, "semaphore", name, name_len, err);
    if (st == RL_OK) {
        s->o.channel = rl_name_prefixed("redisson_sc", name, name_len, 0, &s->o.channel_len);
        if (!s->o.channel) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    if (st != RL_OK) {
        rl_semaphore_free(s);
        return st;
    }
    *out = s;
    return RL_OK;
}

void rl_semaphore_free(rl_semaphore *s) {
    if (!s) return;
    rl_named_destroy(&s->o);
    free(s);
}

const char *rl_semaphore_name(const rl_semaphore *s, size_t *len) {
    if (len) *len = s ? s->o.name_len : 0;
    return s ? s->o.name : NULL;
}

/* Enters the client for a call on s; every entry point that reaches Redis starts here. */
static rl_status enter(rl_semaphore *s, rl_error *err) {
    rl_error_clear(err);
    if (!s) return rl_fail(err, RL_ERR_ARGUMENT, "semaphore must not be NULL");
    return rl_client_enter(s->o.client, err);
}

/* Adds n permits to what this client holds (client mutex taken here). */
static rl_status count_held(rl_semaphore *s, int64_t n, rl_error *err) {
    rl_client *c = s->o.client;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, s->o.name, s->o.name_len, RL_HOLD_SEMAPHORE, 0);
    if (!h)
        h = rl_holds_add(&c->holds, s->o.name, s->o.name_len, RL_HOLD_SEMAPHORE, 0, "", NULL, 0);
    if (h) h->count += n;
    pthread_mutex_unlock(&c->mu);
    return h ? RL_OK : rl_fail(err, RL_ERR_MEMORY, "out of memory counting permits");
}

static rl_status give_back(rl_semaphore *s, int64_t permits, redisReply **reply, rl_error *err) {
    return rl_named_count_write(&s->o, RL_SCRIPT_SEM_RELEASE, permits, reply, err);
}

rl_status rl_semaphore_try_set_permits(rl_semaphore *s, int64_t permits, int *set, rl_error *err) {
    rl_status st = rl_check_permits(permits, 0, "permits", err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    st = rl_named_set_permits(&s->o, RL_SCRIPT_SEM_TRY_SET, permits, set, err);
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_semaphore_add_permits(rl_semaphore *s, int64_t delta, rl_error *err) {
    rl_status st = rl_check_permits(delta, -RL_MAX_PERMITS, "delta", err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    st = rl_named_set_permits(&s->o, RL_SCRIPT_SEM_ADD, delta, NULL, err);
    rl_client_leave(s->o.client);
    return st;
}

typedef struct acquire_try {
    rl_semaphore *s;
    int64_t permits;
} acquire_try;

/* One try: the permits are taken, and counted as this client's, or not. */
static rl_status try_acquire(void *arg, int64_t *hint_ms, rl_error *err) {
    acquire_try *t = arg;
    rl_semaphore *s = t->s;
    char n[24];
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len), rl_arg_num(n, t->permits)};
    redisReply *reply = NULL;
    *hint_ms = -1; /* only a release (its message) frees permits */
    rl_status st =
        rl_named_run(&s->o, RL_SCRIPT_SEM_ACQUIRE, 1, args, 2, 0, rl_reply_is_one, &reply, err);
    if (st == RL_ERR_REPLICA) { /* taken on the master only: give them back */
        freeReplyObject(reply);
        rl_error ignored;
        if (give_back(s, t->permits, &reply, &ignored) == RL_OK) freeReplyObject(reply);
        return st;
    }
    if (st != RL_OK) return st;
    int taken = rl_reply_is_one(reply);
    freeReplyObject(reply);
    if (!taken) return RL_NOT_ACQUIRED;
    st = count_held(s, t->permits, err);
    if (st != RL_OK) { /* uncounted permits could never be released: give them back now */
        rl_error ignored;
        if (give_back(s, t->permits, &reply, &ignored) == RL_OK) freeReplyObject(reply);
    }
    return st;
}

rl_status rl_semaphore_acquire(rl_semaphore *s, int64_t permits, int64_t wait_ms, rl_wait_hook hook,
                               void *hook_userdata, rl_error *err) {
    rl_status st = rl_check_permits(permits, 0, "permits", err);
    if (st == RL_OK) st = rl_check_wait(wait_ms, err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    if (permits > 0) {
        acquire_try t = {s, permits};
        st = rl_wait_for(s->o.client, s->o.channel, s->o.channel_len, 0, try_acquire, &t, wait_ms,
                         hook, hook_userdata, err);
        if (st == RL_NOT_ACQUIRED) rl_named_not_free(&s->o, permits, wait_ms, err);
    }
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_semaphore_release(rl_semaphore *s, int64_t permits, rl_error *err) {
    rl_status st = rl_check_permits(permits, 0, "permits", err);
    if (st != RL_OK || (st = enter(s, err)) != RL_OK) return st;
    rl_client *c = s->o.client;
    char shown[RL_NAME_SHOWN_MAX];
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, s->o.name, s->o.name_len, RL_HOLD_SEMAPHORE, 0);
    int64_t held = h ? h->count : 0;
    if (held < permits) {
        st = rl_fail(err, RL_NOT_OWNED,
                     "semaphore \"%s\": cannot release %lld permit(s), this client holds %lld",
                     rl_named_shown(&s->o, shown), (long long)permits, (long long)held);
    } else if (permits > 0) {
        /* Counted out before the call: two threads can never give back the same permit. */
        h->count -= permits;
        if (h->count == 0) rl_holds_remove(&c->holds, h);
    }
    pthread_mutex_unlock(&c->mu);
    if (st == RL_OK && permits > 0) {
        redisReply *reply = NULL;
        st = give_back(s, permits, &reply, err);
        if (st == RL_OK) freeReplyObject(reply);
    }
    rl_client_leave(c);
    return st;
}

rl_status rl_semaphore_available(rl_semaphore *s, int64_t *permits, rl_error *err) {
    rl_status st = enter(s, err);
    if (st != RL_OK) return st;
    int64_t n = 0;
    st = rl_named_get_count(&s->o, &n, err);
    if (st == RL_OK && permits) *permits = n;
    rl_client_leave(s->o.client);
    return st;
}

rl_status rl_semaphore_drain(rl_semaphore *s, int64_t *drained, rl_error *err) {
    rl_status st = enter(s, err);
    if (st != RL_OK) return st;
    rl_arg args[] = {rl_arg_bytes(s->o.name, s->o.name_len)};
    redisReply *reply = NULL;
    int64_t n = 0;
    st = rl_named_write(&s->o, RL_SCRIPT_SEM_DRAIN, 1, args, 1, &reply, err);
    if (st == RL_OK) {
        st = rl_named_integer(&s->o, reply, "drain", &n, err);
        freeReplyObject(reply);
    }
    if (st == RL_OK && n > 0 && (st = count_held(s, n, err)) != RL_OK) {
        rl_error ignored; /* uncounted permits could never be released: give them back now */
        if (give_back(s, n, &reply, &ignored) == RL_OK) freeReplyObject(reply);
    }
    if (st == RL_OK && drained) *drained = n;
    rl_client_leave(s->o.client);
    return st;
}

int64_t rl_semaphore_held(rl_semaphore *s) {
    if (!s || rl_client_enter(s->o.client, NULL) != RL_OK) return 0;
    rl_client *c = s->o.client;
    pthread_mutex_lock(&c->mu);
    rl_hold *h = rl_holds_find(&c->holds, s->o.name, s->o.name_len, RL_HOLD_SEMAPHORE, 0);
    int64_t n = h ? h->count : 0;
    pthread_mutex_unlock(&c->mu);
    rl_client_leave(c);
    return n;
}

/* ---- async ------------------------------------------------------------------------------- */

static void undo_acquire(void *arg) { /* permits taken after a cancel: given back at once */
    acquire_try *t = arg;
    rl_error ignored;
    rl_semaphore_release(t->s, t->permits, &ignored);
}

static void acquire_ran_out(void *arg, int64_t wait_ms, rl_error *err) {
    acquire_try *t = arg;
    rl_named_not_free(&t->s->o, t->permits, wait_ms, err);
}

static rl_status took_none(void *arg, int64_t *hint_ms, rl_error *err) {
    (void)arg;
    (void)err;
    *hint_ms = -1;
    return RL_OK; /* 0 permits: nothing to take */
}

rl_status rl_semaphore_acquire_async(rl_semaphore *s, int64_t permits, int64_t wait_ms,
                                     rl_done_fn done, void *userdata, rl_call **out,
                                     rl_error *err) {
    static const rl_wait_steps steps = {try_acquire, undo_acquire, acquire_ran_out, free};
    static const rl_wait_steps none = {took_none, NULL, NULL, free};
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!s) return rl_fail(err, RL_ERR_ARGUMENT, "semaphore must not be NULL");
    rl_status st = rl_check_permits(permits, 0, "permits", err);
    if (st == RL_OK) st = rl_check_wait(wait_ms, err);
    if (st != RL_OK) return st;
    acquire_try *t = malloc(sizeof *t);
    if (!t) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    *t = (acquire_try){s, permits};
    return rl_wait_for_async(s->o.client, s->o.channel, s->o.channel_len, 0,
                             permits > 0 ? &steps : &none, t, wait_ms, done, userdata, out, err);
}
