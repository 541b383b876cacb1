/* Redisson's RCountDownLatch: STRING `name` = the count, deleted when it reaches 0; waiters
 * listen on "redisson_countdownlatch__channel__{" + name + "}" (braces always), where "0" says
 * the count reached zero and "1" that a new count was set (docs/protocol.md). */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "family.h"

#define ZERO_COUNT "0" /* the count reached 0: every waiter may go */
#define NEW_COUNT "1"  /* a count was set (or the latch deleted) */

/* The scripts are laid out as Lua, one line per line: */
/* clang-format off */
/* KEYS: name, channel. ARGV: count, new-count message, publish command. 1 set, 0 it existed */
const char rl_lua_latch_try_set[] =
    "if redis.call('exists', KEYS[1]) == 1 then return 0 end\n"
    "redis.call('set', KEYS[1], ARGV[1])\n"
    "redis.call(ARGV[3], KEYS[2], ARGV[2])\n"
    "return 1\n";

/* KEYS: name, channel. ARGV: zero-count message, publish command. The count left */
const char rl_lua_latch_count_down[] =
    "local v = redis.call('decr', KEYS[1])\n"
    "if v <= 0 then redis.call('del', KEYS[1]) end\n"
    "if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end\n"
    "return v\n";

/* KEYS: name, channel. ARGV: new-count message, publish command. 1 deleted, 0 none */
const char rl_lua_latch_delete[] =
    "if redis.call('del', KEYS[1]) == 1 then\n"
    "  redis.call(ARGV[2], KEYS[2], ARGV[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";
/* clang-format on */

struct rl_countdown {
    rl_named o;
};

rl_status rl_countdown_new(rl_client *c, const void *name, size_t name_len, rl_countdown **out,
                           rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    rl_countdown *l = calloc(1, sizeof *l);
    if (!l) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = rl_named_init(&l->o, c, "count-down latch", name, name_len, err);
    if (st == RL_OK) {
        l->o.channel = rl_joined("redisson_countdownlatch__channel__{", 35, name, name_len, "}",
                                 &l->o.channel_len);
        if (!l->o.channel) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    if (st != RL_OK) {
        rl_countdown_free(l);
        return st;
    }
    *out = l;
    return RL_OK;
}

void rl_countdown_free(rl_countdown *l) {
    if (!l) return;
    rl_named_destroy(&l->o);
    free(l);
}

const char *rl_countdown_name(const rl_countdown *l, size_t *len) {
    if (len) *len = l ? l->o.name_len : 0;
    return l ? l->o.name : NULL;
}

static rl_status enter(rl_countdown *l, rl_error *err) {
    rl_error_clear(err);
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "latch must not be NULL");
    return rl_client_enter(l->o.client, err);
}

/* One of the latch's writes: KEYS name, channel; ARGV as given. *answer its integer answer. */
static rl_status latch_write(rl_countdown *l, rl_script_id id, const rl_arg *argv, int argc,
                             int64_t *answer, rl_error *err) {
    rl_arg args[5] = {rl_arg_bytes(l->o.name, l->o.name_len),
                      rl_arg_bytes(l->o.channel, l->o.channel_len)};
    for (int i = 0; i < argc && i < 3; i++)
        args[2 + i] = argv[i];
    redisReply *reply = NULL;
    rl_status st = rl_named_write(&l->o, id, 2, args, 2 + argc, &reply, err);
    if (st != RL_OK) return st;
    st = rl_named_integer(&l->o, reply, "the latch script", answer, err);
    freeReplyObject(reply);
    return st;
}

rl_status rl_countdown_try_set_count(rl_countdown *l, int64_t count, int *set, rl_error *err) {
    if (count < 1 || count > (((int64_t)1) << 53))
        return rl_fail(err, RL_ERR_ARGUMENT, "a latch's count must be from 1 to 2^53");
    rl_status st = enter(l, err);
    if (st != RL_OK) return st;
    char n[24];
    rl_arg args[] = {rl_arg_num(n, count), rl_arg_str(NEW_COUNT), rl_arg_str(RL_PUBLISH)};
    int64_t answer = 0;
    st = latch_write(l, RL_SCRIPT_LATCH_TRY_SET, args, 3, &answer, err);
    if (st == RL_OK && set) *set = answer == 1;
    rl_client_leave(l->o.client);
    return st;
}

rl_status rl_countdown_count_down(rl_countdown *l, rl_error *err) {
    rl_status st = enter(l, err);
    if (st != RL_OK) return st;
    rl_arg args[] = {rl_arg_str(ZERO_COUNT), rl_arg_str(RL_PUBLISH)};
    int64_t left = 0;
    st = latch_write(l, RL_SCRIPT_LATCH_COUNT_DOWN, args, 2, &left, err);
    rl_client_leave(l->o.client);
    return st;
}

rl_status rl_countdown_count(rl_countdown *l, int64_t *count, rl_error *err) {
    rl_status st = enter(l, err);
    if (st != RL_OK) return st;
    int64_t n = 0;
    st = rl_named_get_count(&l->o, &n, err);
    if (st == RL_OK && count) *count = n;
    rl_client_leave(l->o.client);
    return st;
}

static rl_status try_zero(void *arg, int64_t *hint_ms, rl_error *err) {
    rl_countdown *l = arg;
    int64_t n = 0;
    *hint_ms = -1; /* only a message (the count reached 0) ends the wait */
    rl_status st = rl_named_get_count(&l->o, &n, err);
    if (st != RL_OK) return st;
    return n > 0 ? RL_NOT_ACQUIRED : RL_OK;
}

static void wait_ran_out(void *arg, int64_t wait_ms, rl_error *err) {
    rl_countdown *l = arg;
    char shown[RL_NAME_SHOWN_MAX], waited[RL_WAITED_SIZE];
    rl_fail(err, RL_NOT_ACQUIRED, "count-down latch \"%s\" did not reach 0 %s",
            rl_named_shown(&l->o, shown), rl_waited(wait_ms, "yet", waited));
}

rl_status rl_countdown_wait(rl_countdown *l, int64_t wait_ms, rl_wait_hook hook,
                            void *hook_userdata, rl_error *err) {
    rl_status st = rl_check_wait(wait_ms, err);
    if (st != RL_OK || (st = enter(l, err)) != RL_OK) return st;
    st = rl_wait_for(l->o.client, l->o.channel, l->o.channel_len, 1, try_zero, l, wait_ms, hook,
                     hook_userdata, err);
    if (st == RL_NOT_ACQUIRED) wait_ran_out(l, wait_ms, err);
    rl_client_leave(l->o.client);
    return st;
}

rl_status rl_countdown_wait_async(rl_countdown *l, int64_t wait_ms, rl_done_fn done, void *userdata,
                                  rl_call **out, rl_error *err) {
    static const rl_wait_steps steps = {try_zero, NULL, wait_ran_out, NULL};
    rl_error_clear(err);
    if (out) *out = NULL;
    if (!l) return rl_fail(err, RL_ERR_ARGUMENT, "latch must not be NULL");
    rl_status st = rl_check_wait(wait_ms, err);
    if (st != RL_OK) return st;
    return rl_wait_for_async(l->o.client, l->o.channel, l->o.channel_len, 1, &steps, l, wait_ms,
                             done, userdata, out, err);
}

rl_status rl_countdown_delete(rl_countdown *l, int *deleted, rl_error *err) {
    rl_status st = enter(l, err);
    if (st != RL_OK) return st;
    rl_arg args[] = {rl_arg_str(NEW_COUNT), rl_arg_str(RL_PUBLISH)};
    int64_t answer = 0;
    st = latch_write(l, RL_SCRIPT_LATCH_DELETE, args, 2, &answer, err);
    if (st == RL_OK && deleted) *deleted = answer == 1;
    rl_client_leave(l->o.client);
    return st;
}
