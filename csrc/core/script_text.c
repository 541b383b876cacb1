/* The text of every Redis script of the lock protocol (docs/protocol.md), written once, here. The
 * effects on Redis are Redisson's, key for key and message for message; the answers are read only
 * by redlease (scripts.h gives each script's KEYS, ARGV and answers). */
#include "scripts.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */

/* Every acquire answers nil when it took the lock afresh and REENTERED when this owner already
 * held it: the client then knows whether Redis still had the hold it believes it has. */
#define REENTERED "redis.status_reply('REENTERED')"

/* Reentrant lock: free, or already ours -> one more hold and a fresh lease. */
static const char acquire_lua[] =
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
 * gets the first answer instead of releasing twice. */
static const char release_lua[] =
    "local answered = redis.call('get', KEYS[3])\n"
    "if answered ~= false then return tonumber(answered) end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  redis.call('set', KEYS[3], 0, 'px', ARGV[4])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[5], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[3], 1, 'px', ARGV[4])\n"
    "return 1\n";

/* Refuses a key of another type (a lock is a hash): bad input must not delete users' data. */
#define REFUSE_NON_HASH(key)                                                                     \
    "local t = redis.call('type', " key ").ok\n"                                                 \
    "if t ~= 'hash' and t ~= 'none' then\n"                                                      \
    "  return redis.error_reply('WRONGTYPE ' .. " key " .. ' holds a ' .. t .. ', not a lock')\n" \
    "end\n"

static const char force_unlock_lua[] =
    REFUSE_NON_HASH("KEYS[1]")
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* Renew many holds in one call: per key, ARGV[2i] is the owner's field and ARGV[2i+1] is empty,
 * or for a read hold the prefix of its hold keys (prefix:1 .. prefix:count), which are renewed
 * instead; the hash then keeps the longest lease of all its readers. TYPE first so that a key
 * replaced by another type reports "held by others" instead of failing the whole batch. */
static const char renew_lua[] =
    "local lease = tonumber(ARGV[1])\n"
    "local answers = {}\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local field, holds = ARGV[2 * i], ARGV[2 * i + 1]\n"
    "  local kind = redis.call('type', key).ok\n"
    "  if kind == 'none' then\n"
    "    answers[i] = 0\n"
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

/* Fencing: as acquire, plus one INCR of the token key per acquisition (reentrant ones too).
 * Acquired: {-1, token, 1 when re-entered else 0}. */
static const char fenced_acquire_lua[] =
    "local reentered = redis.call('hexists', KEYS[1], ARGV[2])\n"
    "if redis.call('exists', KEYS[1]) == 0 or reentered == 1 then\n"
    "  local token = redis.call('incr', KEYS[2])\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return {-1, token, reentered}\n"
    "end\n"
    "return {redis.call('pttl', KEYS[1]), -1}\n";

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
 * of it, and answers how long to wait; with '0' (one try) answers 1 and never queues. */
static const char fair_acquire_lua[] =
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
 * passed a release meant for the leaver. */
static const char fair_cancel_lua[] =
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
 * (and sets the latch); redlease answers nil, so that the caller learns its hold was lost. */
static const char fair_release_lua[] =
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

static const char fair_force_unlock_lua[] =
    REFUSE_NON_HASH("KEYS[1]")
    FAIR_PURGE("KEYS[2]", "KEYS[3]", "ARGV[3]")
    "if redis.call('del', KEYS[1]) == 1 then\n"
    FAIR_NOTIFY_HEAD("KEYS[2]", "KEYS[4]", "ARGV[2]", "ARGV[1]")
    "  return 1\n"
    "end\n"
    "return 0\n";

/* Read side: shared with other readers, and with this owner's own write hold (downgrade). Each
 * hold k gets its own key KEYS[2]:k with the lease; the hash keeps the longest. */
static const char read_acquire_lua[] =
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

/* Write side: free, or already this owner's write hold (its lease then grows, as Redisson's). */
static const char write_acquire_lua[] =
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
 * (KEYS[4]:<field>:rwlock_timeout:<k> for every field), or while a writer holds it. */
static const char read_release_lua[] =
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
 * holds reads, turns it into a read lock. */
static const char write_release_lua[] =
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

/* Each side deletes the lock only when it is in its own mode (ARGV[1]). */
static const char rw_force_unlock_lua[] =
    REFUSE_NON_HASH("KEYS[1]")
    "if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then\n"
    "  redis.call('del', KEYS[1])\n"
    "  redis.call(ARGV[3], KEYS[2], ARGV[2])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

/* clang-format on */

static const char *const script_text[RL_SCRIPT_COUNT] = {
    [RL_SCRIPT_ACQUIRE] = acquire_lua,
    [RL_SCRIPT_RELEASE] = release_lua,
    [RL_SCRIPT_FORCE_UNLOCK] = force_unlock_lua,
    [RL_SCRIPT_RENEW] = renew_lua,
    [RL_SCRIPT_FENCED_ACQUIRE] = fenced_acquire_lua,
    [RL_SCRIPT_FAIR_ACQUIRE] = fair_acquire_lua,
    [RL_SCRIPT_FAIR_CANCEL] = fair_cancel_lua,
    [RL_SCRIPT_FAIR_RELEASE] = fair_release_lua,
    [RL_SCRIPT_FAIR_FORCE_UNLOCK] = fair_force_unlock_lua,
    [RL_SCRIPT_READ_ACQUIRE] = read_acquire_lua,
    [RL_SCRIPT_WRITE_ACQUIRE] = write_acquire_lua,
    [RL_SCRIPT_READ_RELEASE] = read_release_lua,
    [RL_SCRIPT_WRITE_RELEASE] = write_release_lua,
    [RL_SCRIPT_RW_FORCE_UNLOCK] = rw_force_unlock_lua,
};

const char *rl_script_text(rl_script_id id) {
    return script_text[id];
}
