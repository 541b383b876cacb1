/* Contexts that ended while holding (a thread that exited, a coroutine that was collected): their
 * holds would otherwise be renewed for as long as the client lives, shutting everyone else out. */
#include <stdio.h>
#include <stdlib.h>

#include "client.h"
#include "error.h"
#include "fork.h"
#include "lock.h"
#include "names.h"
#include "validity.h"

/* Finds a lock hold of `context` that is still counted (client mutex held); the semaphores'
 * entries of the table belong to no context. */
static rl_hold *hold_of(rl_client *c, uint64_t context) {
    for (size_t b = 0; b < c->holds.nbuckets; b++)
        for (rl_hold *h = c->holds.buckets[b]; h; h = h->bucket_next)
            if (h->context == context && h->count > 0 && rl_hold_is_lock(h)) return h;
    return NULL;
}

/* Releases h in Redis if it is still this owner's, drops it and reports it (client mutex held;
 * dropped for the network). */
static void release_abandoned(rl_client *c, rl_hold *h) {
    h->releasing = 1;
    rl_watchdog_wait_out_round(c, h);
    rl_holds_unwatch(&c->holds, h); /* renewal stops now, whatever follows */
    rl_lock *l = NULL;
    rl_error err = {.status = RL_OK, .message = "out of memory"};
    rl_status st = RL_ERR_MEMORY;
    int gone_before = h->lost && h->freed;
    int64_t lease = rl_hold_lease(c, h);
    int64_t count = h->count;
    char owner[RL_OWNER_MAX];
    size_t owner_len = rl_hold_owner(&c->holds, h, owner);
    if (!gone_before) {
        pthread_mutex_unlock(&c->mu); /* h stays: releasing, off the renewal list */
        int still_held;
        st = rl_lock_new_kind(c, h->kind, h->name, h->name_len, &l, &err);
        if (st == RL_OK)
            st = rl_lock_call_release_fully(l, owner, owner_len, lease, &still_held, &err);
        pthread_mutex_lock(&c->mu);
    }
    char message[RL_QUOTING_MESSAGE_SIZE], shown[RL_NAME_SHOWN_MAX];
    const char *name = rl_name_shown(h->name, h->name_len, shown);
    if (gone_before || st == RL_OK)
        snprintf(message, sizeof message,
                 "lock \"%s\": its holder (context %llu) ended without releasing %lld hold(s); "
                 "released",
                 name, (unsigned long long)h->context, (long long)count);
    else
        snprintf(message, sizeof message,
                 "lock \"%s\": its holder (context %llu) ended without releasing %lld hold(s); "
                 "renewal stopped, but the release failed (%s): it expires by its lease",
                 name, (unsigned long long)h->context, (long long)count, err.message);
    rl_events_push(&c->events, RL_EVENT_ABANDONED, h->name, h->name_len, h->context, h->lost,
                   (size_t)count, message);
    rl_holds_remove(&c->holds, h);
    if (l) {
        pthread_mutex_unlock(&c->mu); /* freeing the lock may free nothing of the client's */
        rl_lock_free(l);
        pthread_mutex_lock(&c->mu);
    }
}

void rl_client_context_ended(rl_client *c, uint64_t context) {
    pthread_mutex_lock(&c->mu);
    for (rl_hold *h; (h = hold_of(c, context)) != NULL;)
        release_abandoned(c, h);
    pthread_mutex_unlock(&c->mu);
}

void rl_context_ended(uint64_t context) {
    rl_client **clients = NULL;
    size_t n = rl_clients_entered(&clients);
    for (size_t i = 0; i < n; i++) {
        rl_client_context_ended(clients[i], context);
        rl_client_leave(clients[i]);
    }
    free(clients);
}
