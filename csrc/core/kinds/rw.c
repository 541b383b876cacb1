/* Redisson's RReadWriteLock: one hash `name` with a `mode` field ("read" / "write"), a field per
 * reader (<owner> = its read holds) and per writer (<owner>:write); each read hold k also has a
 * key of its own, <key base>:<owner>:rwlock_timeout:<k>, with that hold's lease. Its unlock channel
 * is prefix("redisson_rwlock", name): "0" wakes one waiter, "1" (a write unlock) wakes them all
 * (docs/protocol.md). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kind.h"
#include "script_parts.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Read side: shared with other readers, and with this owner's own write hold (downgrade). Each
 * hold k gets its own key KEYS[2]:k with the lease; the hash keeps the longest.
 * KEYS: name, read-hold key prefix. ARGV: lease, owner, owner:write. As RL_SCRIPT_ACQUIRE */
const char rl_lua_read_acquire[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then\n"
    "  local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])\n"
    "  local left = redis.call('pttl', KEYS[1])\n"
    "  redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))\n"
    "  if k > 1 then return " REENTERED " end\n"
    "  return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Write side: free, or already this owner's write hold (its lease then grows, as Redisson's).
 * KEYS: name. ARGV: lease, owner:write. As RL_SCRIPT_ACQUIRE */
const char rl_lua_write_acquire[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call('hset', KEYS[1], 'mode', 'write')\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))\n"
    "  return " REENTERED "\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* A release of a lock that is gone wakes the waiters as Redisson's does, but writes no latch (as
 * the fair release): its retry must answer "not held" again, never "released". */

/* Drops read hold number count+1; the hash lives on with the longest lease of the holds left
 * (KEYS[4]:<field>:rwlock_timeout:<k> for every field), or while a writer holds it.
 * KEYS: name, channel, read-hold key prefix, key base, latch. ARGV: message, owner, publish
 * command, latch ttl. As RL_SCRIPT_RELEASE */
const char rl_lua_read_release[] =
    "local answered = redis.call('get', KEYS[5])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end\n"
    "local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)\n"
    "if count == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end\n"
    "redis.call('del', KEYS[3] .. ':' .. (count + 1))\n"
    "if redis.call('hlen', KEYS[1]) > 1 then\n"
    "  local longest = -3\n"
    "  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do\n"
    "    local holds = tonumber(redis.call('hget', KEYS[1], field))\n"
    "    if type(holds) == 'number' then\n"
    "      for k = holds, 1, -1 do\n"
    "        local left = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k)\n"
    "        longest = math.max(left, longest)\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if longest > 0 or mode == 'write' then\n"
    "    if longest > 0 then redis.call('pexpire', KEYS[1], longest) end\n"
    "    redis.call('set', KEYS[5], 0, 'px', ARGV[4])\n"
    "    return 0\n"
    "  end\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[5], 1, 'px', ARGV[4])\n"
    "return 1\n";

/* The last write release frees the lock ("1": every waiter may go) or, when this owner still
 * holds reads, turns it into a read lock.
 * KEYS: name, channel, latch. ARGV: message, lease, owner:write, publish command, latch ttl. As
 * RL_SCRIPT_RELEASE */
const char rl_lua_write_release[] =
    "local answered = redis.call('get', KEYS[3])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "  redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], 0, 'px', ARGV[5])\n"
    "  return 0\n"
    "end\n"
    "redis.call('hdel', KEYS[1], ARGV[3])\n"
    "if redis.call('hlen', KEYS[1]) == 1 then\n"
    "  redis.call('del', KEYS[1])\n"
    "  redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "else\n"
    "  redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "end\n"
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5])\n"
    "return 1\n";

/* Each side deletes the lock only when it is in its own mode (ARGV[1]).
 * KEYS: name, channel. ARGV: mode, message, publish command. 1/0 */
const char rl_lua_rw_force_unlock[] =
    REFUSE_NON_HASH("KEYS[1]")
    "if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then\n"
    "  redis.call('del', KEYS[1])\n"
    "  redis.call(ARGV[3], KEYS[2], ARGV[2])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";
/* clang-format on */

static rl_status read_acquire(rl_lock *l, const rl_acquire_args *a, redisReply **reply,
                              rl_error *err) {
    size_t keys_len;
    char *keys = rl_lock_read_keys(l, a->owner, a->owner_len, &keys_len);
    if (!keys) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char writer[RL_OWNER_MAX], lease[24];
    size_t writer_len = a->owner_len + 6; /* the write side's field of this owner */
    memcpy(writer, a->owner, a->owner_len);
    memcpy(writer + a->owner_len, ":write", 7);
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(keys, keys_len),
                     rl_arg_num(lease, a->lease_ms), rl_arg_bytes(a->owner, a->owner_len),
                     rl_arg_bytes(writer, writer_len)};
    rl_status st = rl_kind_run(l, RL_SCRIPT_READ_ACQUIRE, 2, args, 5, 0, NULL, rl_reply_is_acquired,
                               reply, err);
    free(keys);
    return st;
}

static rl_status write_acquire(rl_lock *l, const rl_acquire_args *a, redisReply **reply,
                               rl_error *err) {
    char field[RL_OWNER_MAX], lease[24];
    size_t field_len = rl_lock_field(l, a->owner, a->owner_len, field);
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(field, field_len)};
    return rl_kind_run(l, RL_SCRIPT_WRITE_ACQUIRE, 1, args, 3, 0, NULL, rl_reply_is_acquired, reply,
                       err);
}

static rl_status read_release(rl_lock *l, const rl_release_args *a, redisReply **reply,
                              rl_error *err) {
    size_t keys_len;
    char *keys = rl_lock_read_keys(l, a->field, a->field_len, &keys_len);
    if (!keys) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    size_t key_base_len;
    char *key_base = rl_lock_key_base(l, &key_base_len);
    if (!key_base) {
        free(keys);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    char latch_ttl[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(keys, keys_len),
                     rl_arg_bytes(key_base, key_base_len),
                     rl_arg_bytes(a->latch, a->latch_len),
                     rl_arg_str(RL_ONE_MAY_GO),
                     rl_arg_bytes(a->field, a->field_len),
                     rl_arg_str(RL_PUBLISH),
                     rl_arg_num(latch_ttl, l->client->cfg.options.latch_ttl_ms)};
    rl_status st = rl_kind_run(l, RL_SCRIPT_READ_RELEASE, 5, args, 9, 1, a->delete_latch, a->wrote,
                               reply, err);
    free(key_base);
    free(keys);
    return st;
}

static rl_status write_release(rl_lock *l, const rl_release_args *a, redisReply **reply,
                               rl_error *err) {
    char lease[24], latch_ttl[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len),
                     rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(a->latch, a->latch_len),
                     rl_arg_str(RL_ALL_MAY_GO),
                     rl_arg_num(lease, a->lease_ms),
                     rl_arg_bytes(a->field, a->field_len),
                     rl_arg_str(RL_PUBLISH),
                     rl_arg_num(latch_ttl, l->client->cfg.options.latch_ttl_ms)};
    return rl_kind_run(l, RL_SCRIPT_WRITE_RELEASE, 3, args, 8, 1, a->delete_latch, a->wrote, reply,
                       err);
}

/* Each side deletes the lock only when it is in its own mode. */
static rl_status force_unlock(rl_lock *l, redisReply **reply, rl_error *err) {
    int read = l->kind == RL_LOCK_READ;
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_str(read ? "read" : "write"),
                     rl_arg_str(read ? RL_ONE_MAY_GO : RL_ALL_MAY_GO), rl_arg_str(RL_PUBLISH)};
    return rl_kind_run(l, RL_SCRIPT_RW_FORCE_UNLOCK, 2, args, 5, 0, NULL, rl_reply_is_one, reply,
                       err);
}

const rl_kind rl_kind_read = {
    .channel_prefix = "redisson_rwlock",
    .acquire = read_acquire,
    .release = read_release,
    .force_unlock = force_unlock,
};

const rl_kind rl_kind_write = {
    .channel_prefix = "redisson_rwlock",
    .acquire = write_acquire,
    .release = write_release,
    .force_unlock = force_unlock,
};
