/* Delivery of lost-lock and renewal events to the host's callback, on a thread of their own so
 * that a slow callback (one waiting for Python's GIL, say) never delays a renewal. */
#ifndef RL_EVENTS_H
#define RL_EVENTS_H

#include <pthread.h>

#include "redlease.h"

typedef struct rl_event_item rl_event_item;

typedef struct rl_events {
    pthread_mutex_t mu;
    pthread_cond_t more;
    rl_event_fn fn;
    void *userdata;
    rl_event_item *head, *tail;
    pthread_t thread;
    int thread_started;
    int stop;
} rl_events;

void rl_events_init(rl_events *events, rl_event_fn fn, void *userdata);

/* Queues an event (copying name and message); starts the delivery thread on first use. Does
 * nothing when no callback is set. */
void rl_events_push(rl_events *events, rl_event_kind kind, const void *name, size_t name_len,
                    uint64_t context, rl_lost_reason reason, size_t holds, const char *message);

/* Delivers what is queued, then stops and joins the thread. */
void rl_events_stop(rl_events *events);
void rl_events_destroy(rl_events *events);

/* In a forked child: the thread is gone; drop what was queued. */
void rl_events_forget_after_fork(rl_events *events);

#endif
