/* The client's one pub/sub connection, shared by every waiter of every lock name.
 *
 * A waiter joins the channel of the lock it waits for; the first join subscribes, the last leave
 * has the thread unsubscribe (without waiting for the confirmation), so no subscription outlives
 * its waits for longer than a round trip. A
 * background thread owns the connection: it sends (UN)SUBSCRIBE, reads messages and wakes local
 * waiters: one per "0" message, all of them on "1". When the connection drops it reconnects,
 * resubscribes and wakes every waiter to try again (a message may have been missed).
 *
 * On a Redis Cluster each node has one (`sharded`: SSUBSCRIBE, as Redisson does on Redis 7
 * clusters). When the node stops serving a channel's slot (it answers MOVED, sends SUNSUBSCRIBE
 * by itself, or its connection drops), the entry's waiters are told `moved` and join again at
 * the slot's owner (waiting.c). */
#ifndef RL_SUBSCRIBER_H
#define RL_SUBSCRIBER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "conn.h"
#include "pool.h"

typedef struct rl_sub_entry {
    struct rl_sub_entry *next;       /* every entry */
    struct rl_sub_entry *dirty_next; /* entries the thread must look at */
    unsigned dirty : 1;
    unsigned subscribed : 1;        /* the server confirmed SUBSCRIBE */
    unsigned inflight : 1;          /* a (UN)SUBSCRIBE awaits its confirmation */
    unsigned every : 1;             /* every message wakes every waiter ("0" too): latch channels */
    int waiters;                    /* joined and not yet left */
    int pins;                       /* threads that may still touch the entry */
    unsigned permits;               /* "0" messages not yet taken by a waiter */
    uint64_t wake_all_gen;          /* bumped by "1" messages */
    uint64_t messages;              /* every message, for observing tickets */
    uint64_t sub_gen;               /* bumped by each confirmed SUBSCRIBE */
    struct rl_sub_ticket *notified; /* tickets told of every change (async waiters) */
    uint64_t moved_gen;             /* sharded: bumped when the node stopped serving the channel */
    struct rl_sub_ticket *primed;   /* blocked waiters whose acquire the thread may send, oldest
                                       first (rl_sub_send) */
    pthread_cond_t changed;
    size_t len;
    char channel[];
} rl_sub_entry;

typedef struct rl_subscriber {
    pthread_mutex_t mu;
    pthread_cond_t thread_wake; /* wakes the thread while it has no connection */
    rl_config *cfg;
    rl_sub_entry *entries, *dirty;
    size_t subscribed_count;
    rl_conn conn;
    int connected;
    atomic_int in_io; /* the thread is inside hiredis on conn */
    int wake_pipe[2];
    pthread_t thread;
    int thread_started;
    int stop;
    int sharded; /* a cluster node's: SSUBSCRIBE, SUNSUBSCRIBE, smessage */
    char last_error[sizeof(((rl_error *)0)->message)]; /* the last connection failure, whole */
    struct rl_sub_ticket *claimed; /* primed waiters a message woke: their acquires to send */
} rl_subscriber;

/* A waiter's next acquire, ready to go (woken_acquire.c): when a "0" message wakes the waiter,
 * the subscriber thread sends it on an idle open connection of `pool` itself and does not wait
 * for the answer, so the waiting thread wakes while the acquire is on the wire and only reads
 * the answer. Its fields are the waiter's; the thread writes the outcome before the waiter may
 * look (the ticket's state, under the subscriber's mutex). */
typedef enum rl_sub_send_outcome {
    RL_SUB_SEND_NONE,   /* not sent (no idle open connection, or a stale one): try as usual */
    RL_SUB_SEND_SENT,   /* on the wire on `conn` (taken from the pool): read its answer */
    RL_SUB_SEND_FAILED, /* the connection failed with the command maybe sent: `st`, `err` */
} rl_sub_send_outcome;

typedef struct rl_sub_send {
    rl_pool *pool;
    rl_cmd cmd;
    int64_t timeout_ms;
    int (*held_back)(void *arg); /* not sent while this answers nonzero (NULL: sent) */
    void *held_back_arg;
    rl_sub_send_outcome outcome;
    rl_conn *conn;
    int64_t sent_at; /* rl_now_ms() just before the write */
    rl_status st;
    rl_error err;
} rl_sub_send;

/* A waiter's place on a channel. */
typedef struct rl_sub_ticket {
    rl_subscriber *sub; /* where it joined */
    rl_sub_entry *entry;
    uint64_t moved_seen;
    int moved; /* set with an RL_OK wait: the node no longer serves the channel; join again */
    uint64_t wake_all_seen;
    uint64_t sub_seen;
    int observing;          /* rl_sub_observe: woken by the next message, taking no wake-up */
    uint64_t messages_seen; /* observing: the entry's message count when it began */
    int64_t unsubscribed_since;
    int64_t last_hook;
    void (*notify)(void *userdata); /* notified tickets: called (sub->mu held) on each change */
    void *notify_userdata;
    struct rl_sub_ticket *notify_prev, *notify_next;
    rl_sub_send *send; /* set by the waiter before rl_sub_wait: its acquire, ready */
    int send_state;    /* subscriber.c: not primed, primed, claimed (being sent), done */
    struct rl_sub_ticket *primed_next, *claimed_next;
} rl_sub_ticket;

void rl_sub_init(rl_subscriber *sub, rl_config *cfg);
void rl_sub_stop(rl_subscriber *sub); /* stops the thread; waiters get RL_ERR_CLOSED */
void rl_sub_destroy(rl_subscriber *sub);

rl_status rl_sub_join(rl_subscriber *sub, const char *channel, size_t len, rl_sub_ticket *ticket,
                      rl_error *err);
/* As rl_sub_join, on a channel where every message wakes every waiter: a count-down latch's "0"
 * (the count reached zero) is for all of them, not one. */
rl_status rl_sub_join_every(rl_subscriber *sub, const char *channel, size_t len,
                            rl_sub_ticket *ticket, rl_error *err);

/* Waits until woken (RL_OK: a release message, or a fresh subscription after which the caller
 * must try again, or ticket->moved), until the monotonic time until_ms (RL_NOT_ACQUIRED; until_ms <
 * 0 = never), until `hook` returns non-zero (RL_ABORTED), or fails (RL_ERR_CONNECTION,
 * RL_ERR_CLOSED). With ticket->send set, a "0" message may have the thread send it (RL_OK, its
 * outcome in ticket->send; RL_SUB_SEND_NONE when the wake was anything else): once the thread
 * has taken it, the wait returns only with that outcome, whatever the time or the hook say (the
 * hook is never run while it may be taken), so an acquire sent is always read. */
rl_status rl_sub_wait(rl_subscriber *sub, rl_sub_ticket *ticket, int64_t until_ms,
                      rl_wait_hook hook, void *hook_userdata, rl_error *err);

/* A notified ticket, for a waiter that has no thread to block (an async call): instead of
 * rl_sub_wait, `notify` is called on every change of the channel (a message, a (re)subscription,
 * a lost connection, the client closing) with sub->mu held, so it must only schedule work; that
 * work calls rl_sub_poll. After rl_sub_leave returns, notify is never called again. */
rl_status rl_sub_join_notified(rl_subscriber *sub, const char *channel, size_t len,
                               rl_sub_ticket *ticket, void (*notify)(void *), void *userdata,
                               rl_error *err);
/* As rl_sub_join_notified, on a channel where every message wakes every waiter (a latch's). */
rl_status rl_sub_join_notified_every(rl_subscriber *sub, const char *channel, size_t len,
                                     rl_sub_ticket *ticket, void (*notify)(void *), void *userdata,
                                     rl_error *err);
/* rl_sub_wait without waiting: RL_OK when woken (try again), RL_NOT_ACQUIRED when not (yet),
 * or RL_ERR_CONNECTION / RL_ERR_CLOSED. *recheck_at_ms: when to poll again even if not
 * notified (the subscription is late: the connection limit), else -1. */
rl_status rl_sub_poll(rl_subscriber *sub, rl_sub_ticket *ticket, int64_t *recheck_at_ms,
                      rl_error *err);

/* Observing (on): the ticket's waits return RL_OK at the channel's next message after its
 * `floor`-th (or after the messages read so far, when more), whoever it wakes, without taking
 * that wake-up from a waiter of this client (an acquire that gives way to the waiter its release
 * woke, wake_grace.c). Off: a normal waiter again. */
void rl_sub_observe(rl_subscriber *sub, rl_sub_ticket *ticket, int on, uint64_t floor);
/* Messages read on the channel so far when it is subscribed for waiters of this client (a message
 * published from now on reaches this subscriber), else -1 (a subscription being left may miss
 * it). The floor of an observer that must not take a message
 * published after this for the one it waits for: the count plus one. */
int64_t rl_sub_messages_read(rl_subscriber *sub, const char *channel, size_t len);

void rl_sub_leave(rl_subscriber *sub, rl_sub_ticket *ticket);

size_t rl_sub_count(rl_subscriber *sub);

/* In a forked child: the thread is gone and the connection is the parent's. */
void rl_sub_forget_after_fork(rl_subscriber *sub);
/* In the child, at fork (mu held across it): the condition variables may have had waiters in the
 * parent's threads; they start afresh before anything waits on or destroys them. */
void rl_sub_after_fork_child(rl_subscriber *sub);

#endif
