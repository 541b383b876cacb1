/* Delivery of lost-lock and renewal events to the host's callback, on a thread of their own so
 * that a slow callback (one waiting for Python's GIL, say) never delays a renewal; or, for a host
 * that must not be called from another thread (Lua), kept until it takes them (queued). */
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
    int queued;    /* no thread: the host takes the events with rl_events_take */
    size_t length; /* events waiting */
} rl_events;

void rl_events_init(rl_events *events, rl_event_fn fn, void *userdata, int queued);

/* Queues an event (copying name and message); starts the delivery thread on first use. Does
 * nothing when no callback is set and the events are not queued. */
void rl_events_push(rl_events *events, rl_event_kind kind, const void *name, size_t name_len,
                    uint64_t context, rl_lost_reason reason, size_t holds, const char *message);

/* Queued events: delivers those waiting to fn on the calling thread, oldest first; returns how
 * many. */
size_t rl_events_take(rl_events *events, rl_event_fn fn, void *userdata);

/* Delivers what is queued, then stops and joins the thread. */
void rl_events_stop(rl_events *events);
void rl_events_destroy(rl_events *events);

/* In a forked child: the thread is gone; drop what was queued. */
void rl_events_forget_after_fork(rl_events *events);

#endif
