#include "family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "names.h"
#include "waiting.h"

#define MAX_ARGS 8

rl_status rl_named_init(rl_named *o, rl_client *c, const char *what, const void *name,
                        size_t name_len, rl_error *err) {
    memset(o, 0, sizeof *o);
    o->what = what;
    if (!name || name_len == 0)
        return rl_fail(err, RL_ERR_ARGUMENT, "a %s name must not be empty", what);
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    if ((st = c->deploy->check_name(name, name_len, what, err)) != RL_OK) {
        rl_client_leave(c);
        return st;
    }
    o->name = malloc(name_len + 1);
    if (!o->name) {
        rl_client_leave(c);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    memcpy(o->name, name, name_len);
    o->name[name_len] = '\0';
    o->name_len = name_len;
    o->client = c;
    rl_client_ref(c);
    rl_client_leave(c);
    return RL_OK;
}

void rl_named_destroy(rl_named *o) {
    free(o->name);
    free(o->channel);
    free(o->aux);
    if (o->client) rl_client_unref(o->client);
    memset(o, 0, sizeof *o);
}

const char *rl_named_shown(const rl_named *o, char *out) {
    return rl_name_shown(o->name, o->name_len, out);
}

rl_status rl_named_run(const rl_named *o, rl_script_id id, int nkeys, const rl_arg *args, int nargs,
                       int idempotent, rl_reply_test wrote, redisReply **reply, rl_error *err) {
    const char *argv[RL_SCRIPT_ARGV_HEAD + MAX_ARGS];
    size_t lens[RL_SCRIPT_ARGV_HEAD + MAX_ARGS];
    char numkeys[4];
    if (nargs > MAX_ARGS) return rl_fail(err, RL_ERR_ARGUMENT, "too many script arguments");
    argv[2] = numkeys;
    lens[2] = (size_t)snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    for (int i = 0; i < nargs; i++) {
        argv[RL_SCRIPT_ARGV_HEAD + i] = args[i].p;
        lens[RL_SCRIPT_ARGV_HEAD + i] = args[i].len;
    }
    return rl_client_script(o->client, id, RL_SCRIPT_ARGV_HEAD + nargs, argv, lens, reply,
                            idempotent, NULL, wrote, err);
}

static int any_answer(const redisReply *r) {
    (void)r;
    return 1;
}

rl_status rl_named_write(const rl_named *o, rl_script_id id, int nkeys, const rl_arg *args,
                         int nargs, redisReply **reply, rl_error *err) {
    rl_status st = rl_named_run(o, id, nkeys, args, nargs, 0, any_answer, reply, err);
    if (st == RL_ERR_REPLICA) {
        char message[RL_QUOTING_MESSAGE_SIZE], shown[RL_NAME_SHOWN_MAX];
        snprintf(message, sizeof message, "%s \"%s\": %s", o->what, rl_named_shown(o, shown),
                 err ? err->message : "not acknowledged by any replica");
        rl_events_push(&o->client->events, RL_EVENT_SYNC_FAILED, o->name, o->name_len, 0,
                       RL_LOST_NONE, 1, message);
        rl_error_clear(err);
        st = RL_OK;
    }
    return st;
}

rl_status rl_check_permits(int64_t n, int64_t min, const char *what, rl_error *err) {
    if (n < min || n > RL_MAX_PERMITS)
        return rl_fail(err, RL_ERR_ARGUMENT, "%s must be from %lld to 2^53", what, (long long)min);
    return RL_OK;
}

rl_status rl_named_count_write(const rl_named *o, rl_script_id id, int64_t n, redisReply **reply,
                               rl_error *err) {
    char digits[24];
    rl_arg args[] = {rl_arg_bytes(o->name, o->name_len), rl_arg_bytes(o->channel, o->channel_len),
                     rl_arg_num(digits, n), rl_arg_str(RL_PUBLISH)};
    return rl_named_write(o, id, 2, args, 4, reply, err);
}

rl_status rl_named_set_permits(const rl_named *o, rl_script_id id, int64_t n, int *set,
                               rl_error *err) {
    redisReply *reply = NULL;
    rl_status st = rl_named_count_write(o, id, n, &reply, err);
    if (st == RL_OK) {
        if (set) *set = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
    }
    return st;
}

rl_status rl_named_integer(const rl_named *o, const redisReply *r, const char *call, int64_t *out,
                           rl_error *err) {
    char shown[RL_NAME_SHOWN_MAX];
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return RL_OK;
    }
    if (r->type == REDIS_REPLY_NIL) {
        *out = 0;
        return RL_OK;
    }
    if (r->type == REDIS_REPLY_STRING) {
        char *end;
        long long v = strtoll(r->str, &end, 10);
        if (end != r->str && *end == '\0') {
            *out = v;
            return RL_OK;
        }
    }
    return rl_fail(err, RL_ERR_SERVER, "unexpected answer to %s of %s \"%s\" (type %d)", call,
                   o->what, rl_named_shown(o, shown), r->type);
}

rl_status rl_named_get_count(const rl_named *o, int64_t *out, rl_error *err) {
    const char *argv[2] = {"GET", o->name};
    size_t lens[2] = {3, o->name_len};
    redisReply *reply = NULL;
    rl_status st = rl_client_command(o->client, 2, argv, lens, &reply, err);
    if (st != RL_OK) return st;
    st = rl_named_integer(o, reply, "GET", out, err);
    freeReplyObject(reply);
    return st;
}

rl_status rl_named_not_free(const rl_named *o, int64_t count, int64_t wait_ms, rl_error *err) {
    const char *argv[2] = {"EXISTS", o->name};
    size_t lens[2] = {6, o->name_len};
    redisReply *reply = NULL;
    rl_error ignored;
    int missing = rl_client_command(o->client, 2, argv, lens, &reply, &ignored) == RL_OK &&
                  reply->type == REDIS_REPLY_INTEGER && reply->integer == 0;
    freeReplyObject(reply);
    char shown[RL_NAME_SHOWN_MAX];
    if (missing)
        return rl_fail(err, RL_NOT_ACQUIRED,
                       "%s \"%s\" has no permits (it does not exist): set them with "
                       "try_set_permits or add_permits",
                       o->what, rl_named_shown(o, shown));
    char waited[RL_WAITED_SIZE];
    return rl_fail(err, RL_NOT_ACQUIRED, "%s \"%s\": %lld permit(s) not free %s", o->what,
                   rl_named_shown(o, shown), (long long)count, rl_waited(wait_ms, "now", waited));
}

rl_status rl_check_wait(int64_t wait_ms, rl_error *err) {
    if (wait_ms < RL_WAIT_FOREVER || wait_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "a wait must be from 0 to 2^40 ms, or forever (-1)");
    return RL_OK;
}

rl_status rl_wait_for(rl_client *c, const char *channel, size_t channel_len, int every,
                      rl_attempt_fn attempt, void *arg, int64_t wait_ms, rl_wait_hook hook,
                      void *hook_userdata, rl_error *err) {
    int64_t start = rl_now_ms(), hint = -1;
    rl_status st = attempt(arg, &hint, err);
    if (st != RL_NOT_ACQUIRED || wait_ms == 0) return st;
    int64_t deadline = wait_ms < 0 ? -1 : start + wait_ms;
    rl_sub_ticket ticket;
    st = rl_wait_join(c, channel, channel_len, every, &ticket, err);
    if (st != RL_OK) return st;
    for (;;) {
        /* The first wait returns once the subscription is confirmed and the loop tries again:
         * a message sent between a try and the subscription is never missed. */
        st = attempt(arg, &hint, err);
        if (st != RL_NOT_ACQUIRED) break;
        int64_t now = rl_now_ms();
        if (deadline >= 0 && now >= deadline) break;
        int64_t until = deadline;
        if (hint >= 0 && (until < 0 || now + hint < until)) until = now + hint;
        st = rl_wait_sleep(c, &ticket, until, hook, hook_userdata, err);
        if (st != RL_OK && st != RL_NOT_ACQUIRED) break; /* aborted, closed, unreachable */
    }
    rl_wait_leave(&ticket);
    return st;
}
