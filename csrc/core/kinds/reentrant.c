/* Redisson's RLock: the reentrant lock, and the base of the others. Keys: the lock's hash `name`
 * (field <owner> = hold count), its unlock channel and the unlock latch (docs/protocol.md). */
#include "kind.h"
#include "script_parts.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Reentrant lock: free, or already ours -> one more hold and a fresh lease.
 * KEYS: name. ARGV: lease, owner. nil = acquired afresh, status REENTERED = acquired by an
 * owner that held it, else PTTL */
const char rl_lua_acquire[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return " REENTERED "\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Release one hold. The latch remembers the answer so that a retried release (same request id)
 * gets the first answer instead of releasing twice.
 * KEYS: name, channel, latch. ARGV: message, lease, owner, latch ttl, publish command. nil =
 * not held, 0 = still held, 1 = released, 2 = released and its message reached a subscriber
 * (someone was woken: wake_grace.c). The latch keeps 1: a retried release needs only "released". */
const char rl_lua_release[] =
    "local answered = redis.call('get', KEYS[3])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], 0, 'px', ARGV[4])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "local woken = redis.call(ARGV[5], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[3], 1, 'px', ARGV[4])\n"
    "if woken > 0 then return 2 end\n"
    "return 1\n";

/*KEYS: name, channel. ARGV: message, publish command. 1/0 */
const char rl_lua_force_unlock[] =
    REFUSE_NON_HASH("KEYS[1]")
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";
/* clang-format on */

static rl_status acquire(rl_lock *l, const rl_acquire_args *a, redisReply **reply, rl_error *err) {
    char lease[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(a->owner, a->owner_len)};
    return rl_kind_run(l, RL_SCRIPT_ACQUIRE, 1, args, 3, 0, NULL, rl_reply_is_acquired, reply, err);
}

rl_status rl_reentrant_release(rl_lock *l, const rl_release_args *a, redisReply **reply,
                               rl_error *err) {
    char lease[24], latch_ttl[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(a->latch, a->latch_len),
                     rl_arg_str(RL_ONE_MAY_GO),
                     rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(a->field, a->field_len),
                     rl_arg_num(latch_ttl, l->client->cfg.options.latch_ttl_ms),
                     rl_arg_str(RL_PUBLISH)};
    return rl_kind_run(l, RL_SCRIPT_RELEASE, 3, args, 8, 1, a->delete_latch, a->wrote, reply, err);
}

rl_status rl_reentrant_force_unlock(rl_lock *l, redisReply **reply, rl_error *err) {
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_str(RL_ONE_MAY_GO), rl_arg_str(RL_PUBLISH)};
    return rl_kind_run(l, RL_SCRIPT_FORCE_UNLOCK, 2, args, 4, 0, NULL, rl_reply_is_one, reply, err);
}

const rl_kind rl_kind_reentrant = {
    .channel_prefix = "redisson_lock__channel",
    .acquire = acquire,
    .release = rl_reentrant_release,
    .force_unlock = rl_reentrant_force_unlock,
};
