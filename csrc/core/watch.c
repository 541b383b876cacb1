/* rl_watch_wait: for `redlease watch`, sleep until a lock key changes. When the server sends
 * keyspace notifications for it (notify-keyspace-events with K and the generic, hash and
 * expired classes, or A), the wait is on "__keyspace@<db>__:<name>" through the client's one
 * subscriber connection; otherwise it just sleeps and the caller polls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "error.h"
#include "kind.h"

/* Whether the server's notify-keyspace-events covers a lock's changes (DEL, HSET/HINCRBY,
 * expiry). Refused (an ACL without CONFIG): no. */
static int notifications_on(rl_client *c) {
    const char *argv[3] = {"CONFIG", "GET", "notify-keyspace-events"};
    size_t lens[3] = {6, 3, 22};
    redisReply *reply = NULL;
    if (rl_client_command(c, 3, argv, lens, &reply, NULL) != RL_OK) return 0;
    int on = 0;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == REDIS_REPLY_STRING) {
        const char *flags = reply->element[1]->str;
        int all = strchr(flags, 'A') != NULL;
        on = strchr(flags, 'K') &&
             (all || (strchr(flags, 'g') && strchr(flags, 'h') && strchr(flags, 'x')));
    }
    freeReplyObject(reply);
    return on;
}

static rl_status sleep_for(int64_t timeout_ms, rl_wait_hook hook, void *ud, rl_error *err) {
    int64_t until = rl_now_ms() + timeout_ms;
    for (int64_t now = rl_now_ms(); now < until; now = rl_now_ms()) {
        int64_t slice = until - now < 50 ? until - now : 50;
        struct timespec ts = {0, (long)slice * 1000000L};
        nanosleep(&ts, NULL);
        if (hook && hook(ud)) return rl_fail(err, RL_ABORTED, "the wait was interrupted");
    }
    return RL_OK;
}

rl_status rl_watch_wait(rl_client *c, const void *name, size_t name_len, int64_t timeout_ms,
                        rl_wait_hook hook, void *hook_userdata, int *notified, rl_error *err) {
    rl_error_clear(err);
    if (notified) *notified = 0;
    if (!name || name_len == 0) return rl_fail(err, RL_ERR_ARGUMENT, "a name must not be empty");
    if (timeout_ms < 0 || timeout_ms > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "timeout must be from 0 to 2^40 ms");
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    int on = notifications_on(c);
    if (timeout_ms == 0) { /* only the question: a subscription made and left at once would
                            * leave its confirmations to wake the caller's next wait */
        if (notified) *notified = on;
    } else if (!on) {
        st = sleep_for(timeout_ms, hook, hook_userdata, err);
    } else {
        char head[48];
        int head_len = snprintf(head, sizeof head, "__keyspace@%d__:", c->cfg.endpoint.db);
        size_t channel_len;
        char *channel = rl_joined(head, (size_t)head_len, name, name_len, "", &channel_len);
        rl_sub_ticket ticket;
        st = channel ? rl_sub_join_every(&c->sub, channel, channel_len, &ticket, err)
                     : rl_fail(err, RL_ERR_MEMORY, "out of memory");
        free(channel);
        if (st == RL_OK) {
            if (notified) *notified = 1;
            /* The first wake-up is the subscription's confirmation; the next one a change. */
            int64_t until = rl_now_ms() + timeout_ms;
            st = rl_sub_wait(&c->sub, &ticket, until, hook, hook_userdata, err);
            if (st == RL_OK) st = rl_sub_wait(&c->sub, &ticket, until, hook, hook_userdata, err);
            if (st == RL_NOT_ACQUIRED) st = RL_OK; /* the time ran out: nothing changed */
            rl_sub_leave(&c->sub, &ticket);
        }
    }
    rl_client_leave(c);
    return st;
}
