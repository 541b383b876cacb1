/* Waiting for a lock's messages through the subscriber that serves its channel: the client's one
 * pub/sub connection, or on a cluster the subscriber of the node that serves the channel's slot,
 * joined again at the slot's new owner whenever that node stops serving it. */
#ifndef RL_WAITING_H
#define RL_WAITING_H

#include "client.h"

/* every: each message wakes every waiter (rl_sub_join_every). */
rl_status rl_wait_join(rl_client *c, const char *channel, size_t len, int every, rl_sub_ticket *t,
                       rl_error *err);
/* As rl_wait_join, for an async waiter (rl_sub_join_notified). After a slot move its ticket is
 * woken with `moved` set; the caller leaves and joins again (rl_wait_leave, then this). */
rl_status rl_wait_join_notified(rl_client *c, const char *channel, size_t len, rl_sub_ticket *t,
                                void (*notify)(void *), void *userdata, rl_error *err);
/* The same where each message wakes every waiter (`every`, as rl_wait_join's). */
rl_status rl_wait_join_notified_every(rl_client *c, const char *channel, size_t len, int every,
                                      rl_sub_ticket *t, void (*notify)(void *), void *userdata,
                                      rl_error *err);
/* rl_sub_poll for a notified ticket; after a move it joins again at the slot's owner and
 * answers RL_NOT_ACQUIRED (the new subscription's confirmation wakes it). */
rl_status rl_wait_poll(rl_client *c, rl_sub_ticket *t, int64_t *recheck_at_ms,
                       void (*notify)(void *), void *userdata, rl_error *err);
/* rl_sub_wait; after a move it joins again at the slot's owner and waits on: its next RL_OK
 * comes once subscribed there, and the caller tries again. */
rl_status rl_wait_sleep(rl_client *c, rl_sub_ticket *t, int64_t until_ms, rl_wait_hook hook,
                        void *hook_userdata, rl_error *err);
/* rl_sub_observe on the ticket's subscriber (nothing once it has left). */
void rl_wait_observe(rl_sub_ticket *t, int on, uint64_t floor);
/* rl_sub_messages_read on the subscriber that serves the channel (-1: none, or not subscribed). */
int64_t rl_wait_messages_read(rl_client *c, const char *channel, size_t len);
void rl_wait_leave(rl_sub_ticket *t);

/* Channels subscribed now, over every subscriber. */
size_t rl_wait_subscriptions(rl_client *c);

#endif
