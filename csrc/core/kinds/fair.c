/* Redisson's RFairLock: the reentrant lock's hash, plus a wait queue (the list
 * prefix("redisson_lock_queue", name)) and the waiters' deadlines (the sorted set
 * prefix("redisson_lock_timeout", name), epoch ms); each waiter listens on its own channel,
 * channel + ":" + owner (docs/protocol.md). */
#include "clock.h"
#include "error.h"
#include "kind.h"
#include "names.h"
#include "script_parts.h"

#include <stdlib.h>

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Fair lock: drops waiters whose deadline passed from the head of the queue. */
#define FAIR_PURGE(queue, deadlines, now)                                                      \
    "while true do\n"                                                                          \
    "  local head = redis.call('lindex', " queue ", 0)\n"                                      \
    "  if head == false then break end\n"                                                      \
    "  local deadline = redis.call('zscore', " deadlines ", head)\n"                           \
    "  if deadline == false or tonumber(deadline) > tonumber(" now ") then break end\n"        \
    "  redis.call('zrem', " deadlines ", head)\n"                                              \
    "  redis.call('lpop', " queue ")\n"                                                        \
    "end\n"

/* Takes the lock when it is free and this owner is first in line, or re-enters. Otherwise, with
 * ARGV[5] = '1', joins the queue (once) with a deadline one wait window after the waiter ahead
 * of it, and answers how long to wait; with '0' (one try) answers 1 and never queues.
 * KEYS: name, queue, deadlines. ARGV: lease, owner, wait window, now (epoch ms), queue ("1") or
 * one try ("0"). nil / REENTERED as RL_SCRIPT_ACQUIRE, else the time to wait (one try: 1) */
const char rl_lua_fair_acquire[] =
    FAIR_PURGE("KEYS[2]", "KEYS[3]", "ARGV[4]")
    "if redis.call('exists', KEYS[1]) == 0 and (redis.call('exists', KEYS[2]) == 0\n"
    "    or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then\n"
    "  redis.call('lpop', KEYS[2])\n"
    "  redis.call('zrem', KEYS[3], ARGV[2])\n"
    "  for _, waiter in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do\n"
    "    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiter)\n"
    "  end\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return " REENTERED "\n"
    "end\n"
    "if ARGV[5] ~= '1' then return 1 end\n"
    "if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then\n"
    "  return math.max(0, redis.call('pttl', KEYS[1]))\n"
    "end\n"
    "local last = redis.call('lindex', KEYS[2], -1)\n"
    "local ttl\n"
    "local last_deadline = last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last)\n"
    "if last_deadline then\n"
    "  ttl = tonumber(last_deadline) - tonumber(ARGV[4])\n"
    "else\n"
    "  ttl = redis.call('pttl', KEYS[1])\n"
    "end\n"
    "local deadline = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])\n"
    "if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then\n"
    "  redis.call('rpush', KEYS[2], ARGV[2])\n"
    "end\n"
    "return ttl\n";

/* A waiter that gives up leaves the queue; everyone behind it moves one wait window forward.
 * When it was first in line and the lock is free, the new first is woken: it may have been
 * passed a release meant for the leaver.
 * KEYS: queue, deadlines, name, channel. ARGV: owner, wait window, message, publish command. 1 */
const char rl_lua_fair_cancel[] =
    "local queue = redis.call('lrange', KEYS[1], 0, -1)\n"
    "local i = 1\n"
    "while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end\n"
    "for j = i + 1, #queue do\n"
    "  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[j])\n"
    "end\n"
    "redis.call('zrem', KEYS[2], ARGV[1])\n"
    "redis.call('lrem', KEYS[1], 0, ARGV[1])\n"
    "if i == 1 and #queue > 1 and redis.call('exists', KEYS[3]) == 0 then\n"
    "  redis.call(ARGV[4], KEYS[4] .. ':' .. queue[2], ARGV[3])\n"
    "end\n"
    "return 1\n";

/* Wakes the first waiter in line on its own channel (KEYS[4] .. ':' .. owner). */
#define FAIR_NOTIFY_HEAD(queue, channel, publish, message)                  \
    "local next_waiter = redis.call('lindex', " queue ", 0)\n"              \
    "if next_waiter ~= false then\n"                                        \
    "  redis.call(" publish ", " channel " .. ':' .. next_waiter, " message ")\n" \
    "end\n"

/* As release, plus the queue: a gone lock still wakes the head waiter. Redisson answers 1 there
 * (and sets the latch); redlease answers nil, so that the caller learns its hold was lost.
 * KEYS: name, queue, deadlines, channel, latch. ARGV: message, lease, owner, now, publish
 * command, latch ttl. As RL_SCRIPT_RELEASE */
const char rl_lua_fair_release[] =
    "local answered = redis.call('get', KEYS[5])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    FAIR_PURGE("KEYS[2]", "KEYS[3]", "ARGV[4]")
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    FAIR_NOTIFY_HEAD("KEYS[2]", "KEYS[4]", "ARGV[5]", "ARGV[1]")
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[5], 0, 'px', ARGV[6])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('set', KEYS[5], 1, 'px', ARGV[6])\n"
    FAIR_NOTIFY_HEAD("KEYS[2]", "KEYS[4]", "ARGV[5]", "ARGV[1]")
    "return 1\n";

/*KEYS: name, queue, deadlines, channel. ARGV: message, publish command, now. 1/0 */
const char rl_lua_fair_force_unlock[] =
    REFUSE_NON_HASH("KEYS[1]")
    FAIR_PURGE("KEYS[2]", "KEYS[3]", "ARGV[3]")
    "if redis.call('del', KEYS[1]) == 1 then\n"
    FAIR_NOTIFY_HEAD("KEYS[2]", "KEYS[4]", "ARGV[2]", "ARGV[1]")
    "  return 1\n"
    "end\n"
    "return 0\n";
/* clang-format on */

/* The queue and the waiters' deadlines, made per call from the name. */
typedef struct fair_keys {
    char *queue, *deadlines;
    size_t queue_len, deadlines_len;
} fair_keys;

static void fair_keys_free(fair_keys *k) {
    free(k->queue);
    free(k->deadlines);
}

static int fair_keys_make(const rl_lock *l, fair_keys *k) {
    k->queue = rl_lock_key(l, "redisson_lock_queue", &k->queue_len);
    k->deadlines = rl_lock_key(l, "redisson_lock_timeout", &k->deadlines_len);
    if (k->queue && k->deadlines) return 0;
    fair_keys_free(k);
    return -1;
}

static rl_status acquire(rl_lock *l, const rl_acquire_args *a, redisReply **reply, rl_error *err) {
    fair_keys k;
    if (fair_keys_make(l, &k) != 0) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char lease[24], window[24], now[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(k.queue, k.queue_len),
                     rl_arg_bytes(k.deadlines, k.deadlines_len),
                     rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(a->owner, a->owner_len),
                     rl_arg_num(window, a->window_ms),
                     rl_arg_num(now, rl_epoch_ms()),
                     rl_arg_str(a->queue ? "1" : "0")};
    rl_status st = rl_kind_run(l, RL_SCRIPT_FAIR_ACQUIRE, 3, args, 8, 0, NULL, rl_reply_is_acquired,
                               reply, err);
    fair_keys_free(&k);
    return st;
}

static void leave_queue(rl_lock *l, const char *owner, size_t owner_len, int64_t window_ms) {
    fair_keys k;
    if (fair_keys_make(l, &k) != 0) return; /* best effort: the place ends with its window */
    char window[24];
    rl_arg args[] = {rl_arg_bytes(k.queue, k.queue_len), rl_arg_bytes(k.deadlines, k.deadlines_len),
                     rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(owner, owner_len),     rl_arg_num(window, window_ms),
                     rl_arg_str(RL_ONE_MAY_GO),          rl_arg_str(RL_PUBLISH)};
    redisReply *reply = NULL;
    rl_error ignored;
    if (rl_kind_run(l, RL_SCRIPT_FAIR_CANCEL, 4, args, 8, 1, NULL, NULL, &reply, &ignored) == RL_OK)
        freeReplyObject(reply);
    fair_keys_free(&k);
}

static rl_status release(rl_lock *l, const rl_release_args *a, redisReply **reply, rl_error *err) {
    fair_keys k;
    if (fair_keys_make(l, &k) != 0) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char lease[24], now[24], latch_ttl[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(k.queue, k.queue_len),
                     rl_arg_bytes(k.deadlines, k.deadlines_len),
                     rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(a->latch, a->latch_len),
                     rl_arg_str(RL_ONE_MAY_GO),
                     rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(a->field, a->field_len),
                     rl_arg_num(now, rl_epoch_ms()),
                     rl_arg_str(RL_PUBLISH),
                     rl_arg_num(latch_ttl, l->client->cfg.options.latch_ttl_ms)};
    rl_status st = rl_kind_run(l, RL_SCRIPT_FAIR_RELEASE, 5, args, 11, 1, a->delete_latch, a->wrote,
                               reply, err);
    fair_keys_free(&k);
    return st;
}

static rl_status force_unlock(rl_lock *l, redisReply **reply, rl_error *err) {
    fair_keys k;
    if (fair_keys_make(l, &k) != 0) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char now[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(k.queue, k.queue_len),
                     rl_arg_bytes(k.deadlines, k.deadlines_len),
                     rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_str(RL_ONE_MAY_GO),
                     rl_arg_str(RL_PUBLISH),
                     rl_arg_num(now, rl_epoch_ms())};
    rl_status st = rl_kind_run(l, RL_SCRIPT_FAIR_FORCE_UNLOCK, 4, args, 7, 0, NULL, rl_reply_is_one,
                               reply, err);
    fair_keys_free(&k);
    return st;
}

/* A one-try (no queue) refusal answers 1, not a time. */
static int read_answer(const rl_acquire_args *a, const redisReply *r, rl_acquire_answer *out) {
    if (a->queue || r->type != REDIS_REPLY_INTEGER) return 0;
    out->wait_hint_ms = -1;
    return 1;
}

const rl_kind rl_kind_fair = {
    .channel_prefix = "redisson_lock__channel",
    .acquire = acquire,
    .read_answer = read_answer,
    .release = release,
    .force_unlock = force_unlock,
    .leave_queue = leave_queue,
};
