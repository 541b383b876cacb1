#include "waiting.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static rl_subscriber *serving(rl_client *c, const char *channel, size_t len, rl_error *err) {
    return c->deploy->subscriber(c, channel, len, err);
}

rl_status rl_wait_join(rl_client *c, const char *channel, size_t len, int every, rl_sub_ticket *t,
                       rl_error *err) {
    rl_subscriber *sub = serving(c, channel, len, err);
    if (!sub) return err ? err->status : RL_ERR_CONNECTION;
    return every ? rl_sub_join_every(sub, channel, len, t, err)
                 : rl_sub_join(sub, channel, len, t, err);
}

/* After a move: leaves the ticket's channel and joins it again at the slot's owner (notified
 * again when notify is set). */
static rl_status rejoin(rl_client *c, rl_sub_ticket *t, void (*notify)(void *), void *userdata,
                        rl_error *err) {
    /* The entry stays pinned until the leave: copy what joining again needs first. */
    size_t len = t->entry->len;
    int every = t->entry->every;
    char *channel = malloc(len ? len : 1);
    if (!channel) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    memcpy(channel, t->entry->channel, len);
    rl_wait_leave(t);
    c->deploy->channel_moved(c, channel, len);
    rl_status st =
        notify ? rl_wait_join_notified_every(c, channel, len, every, t, notify, userdata, err)
               : rl_wait_join(c, channel, len, every, t, err);
    free(channel);
    return st;
}

rl_status rl_wait_poll(rl_client *c, rl_sub_ticket *t, int64_t *recheck_at_ms,
                       void (*notify)(void *), void *userdata, rl_error *err) {
    t->moved = 0;
    rl_status st = rl_sub_poll(t->sub, t, recheck_at_ms, err);
    if (st != RL_OK || !t->moved) return st;
    st = rejoin(c, t, notify, userdata, err);
    /* The fresh ticket's first wake is its confirmed subscription: try again then. */
    return st == RL_OK ? RL_NOT_ACQUIRED : st;
}

rl_status rl_wait_join_notified(rl_client *c, const char *channel, size_t len, rl_sub_ticket *t,
                                void (*notify)(void *), void *userdata, rl_error *err) {
    return rl_wait_join_notified_every(c, channel, len, 0, t, notify, userdata, err);
}

rl_status rl_wait_join_notified_every(rl_client *c, const char *channel, size_t len, int every,
                                      rl_sub_ticket *t, void (*notify)(void *), void *userdata,
                                      rl_error *err) {
    rl_subscriber *sub = serving(c, channel, len, err);
    if (!sub) return err ? err->status : RL_ERR_CONNECTION;
    return every ? rl_sub_join_notified_every(sub, channel, len, t, notify, userdata, err)
                 : rl_sub_join_notified(sub, channel, len, t, notify, userdata, err);
}

rl_status rl_wait_sleep(rl_client *c, rl_sub_ticket *t, int64_t until_ms, rl_wait_hook hook,
                        void *hook_userdata, rl_error *err) {
    for (;;) {
        t->moved = 0;
        rl_status st = rl_sub_wait(t->sub, t, until_ms, hook, hook_userdata, err);
        if (st != RL_OK || !t->moved) return st;
        st = rejoin(c, t, NULL, NULL, err);
        if (st != RL_OK) return st;
        /* Waiting on: the fresh ticket's first wake is its confirmed subscription, after which
         * the caller tries again, at a node that serves the slot (not a dying one). */
    }
}

void rl_wait_observe(rl_sub_ticket *t, int on, uint64_t floor) {
    if (t->entry) rl_sub_observe(t->sub, t, on, floor);
}

int64_t rl_wait_messages_read(rl_client *c, const char *channel, size_t len) {
    rl_subscriber *sub = serving(c, channel, len, NULL);
    return sub ? rl_sub_messages_read(sub, channel, len) : -1;
}

void rl_wait_leave(rl_sub_ticket *t) {
    if (t->entry) rl_sub_leave(t->sub, t);
}

size_t rl_wait_subscriptions(rl_client *c) {
    return c->deploy->subscriptions(c);
}
