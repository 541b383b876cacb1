/* Fencing that the storage checks (docs/semantics.md, docs/protocol.md): a write to a Redis key
 * that keeps the greatest fencing token beside it and refuses an older one, and the cleanup of a
 * free name's fencing counter. */
#include <stdlib.h>

#include "error.h"
#include "family.h"

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* Writes the value when the token is at least the fence, which then becomes the token.
 * KEYS: key, fence. ARGV: token, value. {1 written / 0 refused, the fence before} */
const char rl_lua_fenced_set[] =
    "local fence = 0\n"
    "local seen = redis.call('get', KEYS[2])\n"
    "if seen then\n"
    "  fence = tonumber(seen)\n"
    "  if not fence then\n"
    "    return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' is not a fencing token')\n"
    "  end\n"
    "end\n"
    "if tonumber(ARGV[1]) < fence then return {0, fence} end\n"
    "redis.call('set', KEYS[1], ARGV[2])\n"
    "redis.call('set', KEYS[2], ARGV[1])\n"
    "return {1, fence}\n";

/* Deletes a fencing counter, unless its lock is held (the holder's token must stay fenced).
 * KEYS: name, token. -1 held, else the counter's last value (0: there was none) */
const char rl_lua_fence_drop[] =
    "if redis.call('exists', KEYS[1]) == 1 then return -1 end\n"
    "local last = redis.call('get', KEYS[2])\n"
    "if not last then return 0 end\n"
    "if not tonumber(last) then\n"
    "  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' is not a fencing counter')\n"
    "end\n"
    "redis.call('del', KEYS[2])\n"
    "return tonumber(last)\n";
/* clang-format on */

/* The key (or lock name) with its second key prefix(prefix, name) in aux, which shares its slot. */
static rl_status named_pair(rl_named *o, rl_client *c, const char *what, const char *prefix,
                            const void *name, size_t name_len, rl_error *err) {
    rl_status st = rl_named_init(o, c, what, name, name_len, err);
    if (st != RL_OK) return st;
    o->aux = rl_name_prefixed(prefix, name, name_len, 0, &o->aux_len);
    if (!o->aux) {
        rl_named_destroy(o);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    return RL_OK;
}

static int is_answer(const redisReply *r) {
    return r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
           r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER;
}

rl_status rl_fenced_set(rl_client *c, const void *key, size_t key_len, const void *value,
                        size_t value_len, int64_t token, int *written, int64_t *fence,
                        rl_error *err) {
    rl_error_clear(err);
    if (!c || !key || (!value && value_len))
        return rl_fail(err, RL_ERR_ARGUMENT, "client, key and value must not be NULL");
    if (token < 1 || token > RL_MAX_PERMITS)
        return rl_fail(err, RL_ERR_ARGUMENT, "a fencing token must be from 1 to 2^53");
    rl_named o;
    rl_status st = named_pair(&o, c, "fenced key", "redlease_fence", key, key_len, err);
    if (st != RL_OK) return st;
    if ((st = rl_client_enter(c, err)) != RL_OK) {
        rl_named_destroy(&o);
        return st;
    }
    char t[24];
    rl_arg args[] = {rl_arg_bytes(o.name, o.name_len), rl_arg_bytes(o.aux, o.aux_len),
                     rl_arg_num(t, token), rl_arg_bytes(value ? value : "", value_len)};
    redisReply *reply = NULL;
    st = rl_named_write(&o, RL_SCRIPT_FENCED_SET, 2, args, 4, &reply, err);
    if (st == RL_OK && !is_answer(reply)) {
        char shown[RL_NAME_SHOWN_MAX];
        st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to the fenced write of \"%s\"",
                     rl_named_shown(&o, shown));
    } else if (st == RL_OK) {
        if (written) *written = reply->element[0]->integer == 1;
        if (fence) *fence = reply->element[1]->integer;
    }
    freeReplyObject(reply);
    rl_client_leave(c);
    rl_named_destroy(&o);
    return st;
}

rl_status rl_fence_drop(rl_client *c, const void *name, size_t name_len, int64_t *dropped,
                        rl_error *err) {
    rl_error_clear(err);
    if (!c || !name) return rl_fail(err, RL_ERR_ARGUMENT, "client and name must not be NULL");
    rl_named o;
    rl_status st = named_pair(&o, c, "lock", "redisson_lock_token", name, name_len, err);
    if (st != RL_OK) return st;
    if ((st = rl_client_enter(c, err)) != RL_OK) {
        rl_named_destroy(&o);
        return st;
    }
    rl_arg args[] = {rl_arg_bytes(o.name, o.name_len), rl_arg_bytes(o.aux, o.aux_len)};
    redisReply *reply = NULL;
    st = rl_named_write(&o, RL_SCRIPT_FENCE_DROP, 2, args, 2, &reply, err);
    int64_t answer = 0;
    if (st == RL_OK) st = rl_named_integer(&o, reply, "the fence drop", &answer, err);
    if (st == RL_OK && dropped) *dropped = answer;
    freeReplyObject(reply);
    rl_client_leave(c);
    rl_named_destroy(&o);
    return st;
}
