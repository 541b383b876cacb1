/* Redisson's RFencedLock: the reentrant lock, plus a fencing token per acquire from the counter
 * prefix("redisson_lock_token", name), which never expires (docs/protocol.md). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "kind.h"
#include "names.h"
#include "script_parts.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Fencing: as acquire, plus one INCR of the token key per acquisition (reentrant ones too).
 * Acquired: {-1, token, 1 when re-entered else 0}.
 * KEYS: name, token. ARGV: lease, owner. {-1, token, re-entered 0/1} / {PTTL, -1} */
const char rl_lua_fenced_acquire[] =
    "local reentered = redis.call('hexists', KEYS[1], ARGV[2])\n"
    "if redis.call('exists', KEYS[1]) == 0 or reentered == 1 then\n"
    "  local token = redis.call('incr', KEYS[2])\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return {-1, token, reentered}\n"
    "end\n"
    "return {redis.call('pttl', KEYS[1]), -1}\n";

/* As the reentrant force unlock, and the fence advances (always, held or not): the evicted
 * holder's token is below the counter at once, and a store told the new value refuses it.
 * KEYS: name, channel, token. ARGV: message, publish command. 1/0 */
const char rl_lua_fenced_force_unlock[] =
    REFUSE_NON_HASH("KEYS[1]")
    "redis.call('incr', KEYS[3])\n"
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";
/* clang-format on */

/* {-1, token, re-entered}: acquired. A refusal is {PTTL, -1}, which reads {-1, -1} when the
 * holder's key has no TTL: only a real token (>= 1) means acquired. */
static int reply_is_token(const redisReply *r) {
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
           r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == -1 &&
           r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer >= 1;
}

#define TOKEN_PREFIX "redisson_lock_token"

static rl_status acquire(rl_lock *l, const rl_acquire_args *a, redisReply **reply, rl_error *err) {
    size_t token_key_len;
    char *token_key = rl_lock_key(l, TOKEN_PREFIX, &token_key_len);
    if (!token_key) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    char lease[24];
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(token_key, token_key_len),
                     rl_arg_num(lease, a->lease_ms), rl_arg_bytes(a->owner, a->owner_len)};
    rl_status st =
        rl_kind_run(l, RL_SCRIPT_FENCED_ACQUIRE, 2, args, 4, 0, NULL, reply_is_token, reply, err);
    free(token_key);
    return st;
}

static int64_t integer_of(const redisReply *r) {
    if (r->type == REDIS_REPLY_INTEGER) return r->integer;
    if (r->type == REDIS_REPLY_STRING) return strtoll(r->str, NULL, 10);
    return -1;
}

/* {-1, token, re-entered} or {PTTL, -1}. */
static int read_answer(const rl_acquire_args *a, const redisReply *r, rl_acquire_answer *out) {
    (void)a;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2) return 0;
    if (reply_is_token(r)) {
        out->acquired = 1;
        out->token = r->element[1]->integer;
        out->reentered = r->elements >= 3 && integer_of(r->element[2]) == 1;
    } else {
        out->wait_hint_ms = integer_of(r->element[0]);
    }
    return 1;
}

/* The fenced force unlock writes whatever it answers (the fence), for replica sync. */
static int always_wrote(const redisReply *r) {
    (void)r;
    return 1;
}

static rl_status force_unlock(rl_lock *l, redisReply **reply, rl_error *err) {
    size_t token_key_len;
    char *token_key = rl_lock_key(l, TOKEN_PREFIX, &token_key_len);
    if (!token_key) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_arg args[] = {rl_arg_bytes(l->name, l->name_len), rl_arg_bytes(l->channel, l->channel_len),
                     rl_arg_bytes(token_key, token_key_len), rl_arg_str(RL_ONE_MAY_GO),
                     rl_arg_str(RL_PUBLISH)};
    rl_status st = rl_kind_run(l, RL_SCRIPT_FENCED_FORCE_UNLOCK, 3, args, 5, 0, NULL, always_wrote,
                               reply, err);
    free(token_key);
    return st;
}

const rl_kind rl_kind_fenced = {
    .channel_prefix = "redisson_lock__channel",
    .acquire = acquire,
    .read_answer = read_answer,
    .release = rl_reentrant_release,
    .force_unlock = force_unlock,
};
