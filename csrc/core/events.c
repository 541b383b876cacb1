#include "events.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "threads.h"

struct rl_event_item {
    rl_event_item *next;
    rl_event event;
    char *message;
    char name[];
};

/* Queued events wait for the host's next call: while it makes none, renewal rounds that went
 * well are dropped beyond this many waiting, so that an idle host's queue stays small (the
 * events that matter, a failure or a loss, are kept). */
#define QUEUED_KEEP_ROUTINE 64

void rl_events_init(rl_events *ev, rl_event_fn fn, void *userdata, int queued) {
    memset(ev, 0, sizeof *ev);
    ev->queued = queued;
    pthread_mutex_init(&ev->mu, NULL);
    rl_cond_init(&ev->more);
    ev->fn = fn;
    ev->userdata = userdata;
}

static void free_queue(rl_events *ev) {
    while (ev->head) {
        rl_event_item *next = ev->head->next;
        free(ev->head->message);
        free(ev->head);
        ev->head = next;
    }
    ev->tail = NULL;
    ev->length = 0;
}

static void *deliver_main(void *arg) {
    rl_events *ev = arg;
    pthread_mutex_lock(&ev->mu);
    for (;;) {
        while (!ev->head && !ev->stop)
            pthread_cond_wait(&ev->more, &ev->mu);
        if (!ev->head) break; /* stopping with nothing left */
        rl_event_item *item = ev->head;
        ev->head = item->next;
        if (!ev->head) ev->tail = NULL;
        ev->length--;
        pthread_mutex_unlock(&ev->mu);
        ev->fn(&item->event, ev->userdata);
        free(item->message);
        free(item);
        pthread_mutex_lock(&ev->mu);
    }
    pthread_mutex_unlock(&ev->mu);
    return NULL;
}

void rl_events_push(rl_events *ev, rl_event_kind kind, const void *name, size_t name_len,
                    uint64_t context, rl_lost_reason reason, size_t holds, const char *message) {
    if (!ev->fn && !ev->queued) return;
    rl_event_item *item = calloc(1, sizeof *item + name_len + 1);
    if (!item) return;
    if (name_len) memcpy(item->name, name, name_len);
    item->message = strdup(message ? message : "");
    item->event = (rl_event){.kind = kind,
                             .name = name ? item->name : NULL,
                             .name_len = name_len,
                             .context = context,
                             .reason = reason,
                             .holds = holds,
                             .message = item->message ? item->message : ""};
    pthread_mutex_lock(&ev->mu);
    if (ev->stop || (ev->queued && kind == RL_EVENT_RENEWED && ev->length >= QUEUED_KEEP_ROUTINE)) {
        pthread_mutex_unlock(&ev->mu);
        free(item->message);
        free(item);
        return;
    }
    if (ev->tail)
        ev->tail->next = item;
    else
        ev->head = item;
    ev->tail = item;
    ev->length++;
    if (!ev->thread_started && !ev->queued)
        ev->thread_started = rl_thread_start(&ev->thread, deliver_main, ev) == 0;
    pthread_cond_signal(&ev->more);
    pthread_mutex_unlock(&ev->mu);
}

size_t rl_events_take(rl_events *ev, rl_event_fn fn, void *userdata) {
    size_t n = 0;
    for (;;) {
        pthread_mutex_lock(&ev->mu);
        rl_event_item *item = ev->head;
        if (item) {
            ev->head = item->next;
            if (!ev->head) ev->tail = NULL;
            ev->length--;
        }
        pthread_mutex_unlock(&ev->mu);
        if (!item) return n;
        fn(&item->event, userdata);
        free(item->message);
        free(item);
        n++;
    }
}

void rl_events_stop(rl_events *ev) {
    pthread_mutex_lock(&ev->mu);
    ev->stop = 1;
    int started = ev->thread_started;
    ev->thread_started = 0;
    pthread_cond_broadcast(&ev->more);
    pthread_mutex_unlock(&ev->mu);
    if (started) pthread_join(ev->thread, NULL);
    pthread_mutex_lock(&ev->mu);
    free_queue(ev);
    pthread_mutex_unlock(&ev->mu);
}

void rl_events_destroy(rl_events *ev) {
    free_queue(ev);
    pthread_mutex_destroy(&ev->mu);
    pthread_cond_destroy(&ev->more);
}

void rl_events_forget_after_fork(rl_events *ev) {
    free_queue(ev);
    ev->thread_started = 0;
}
