#include "subscriber.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "platform.h"
#include "threads.h"

#define WAIT_SLICE_MS 50   /* how often a waiter wakes to run the host's hook */
#define IDLE_WAIT_MS 60000 /* a waiter without one looks again this often, as a backstop */
#define RECONNECT_MIN_MS 50
#define RECONNECT_MAX_MS 1000

/* A ticket's rl_sub_send (mu held to change it): waiting with it, the message that woke it took
 * it, its outcome written. */
enum { SEND_IDLE, SEND_PRIMED, SEND_CLAIMED, SEND_DONE };

void rl_sub_init(rl_subscriber *sub, rl_config *cfg) {
    memset(sub, 0, sizeof *sub);
    rl_conn_init(&sub->conn, cfg);
    pthread_mutex_init(&sub->mu, NULL);
    rl_cond_init(&sub->thread_wake);
    sub->cfg = cfg;
    sub->wake_pipe[0] = sub->wake_pipe[1] = -1;
    atomic_init(&sub->in_io, 0);
}

/* Everything below marked "mu held" runs with sub->mu locked. */

static void wake_thread(rl_subscriber *sub) { /* mu held */
    pthread_cond_signal(&sub->thread_wake);
    rl_plat_pipe_poke(sub->wake_pipe[1]);
}

static void mark_dirty(rl_subscriber *sub, rl_sub_entry *e) { /* mu held */
    if (e->dirty) return;
    e->dirty = 1;
    e->dirty_next = sub->dirty;
    sub->dirty = e;
}

/* Wakes the entry's blocked waiters and tells its notified tickets. */
static void entry_changed(rl_sub_entry *e) { /* mu held */
    pthread_cond_broadcast(&e->changed);
    for (rl_sub_ticket *t = e->notified; t; t = t->notify_next)
        t->notify(t->notify_userdata);
}

static rl_sub_entry *find_entry(rl_subscriber *sub, const char *channel, size_t len) {
    for (rl_sub_entry *e = sub->entries; e; e = e->next)
        if (e->len == len && memcmp(e->channel, channel, len) == 0) return e;
    return NULL;
}

static void free_entry(rl_subscriber *sub, rl_sub_entry *e) { /* mu held, e not dirty */
    rl_sub_entry **p = &sub->entries;
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    pthread_cond_destroy(&e->changed);
    free(e);
}

static void set_subscribed(rl_subscriber *sub, rl_sub_entry *e, int on) {
    if (e->subscribed && !on) sub->subscribed_count--;
    if (!e->subscribed && on) sub->subscribed_count++;
    e->subscribed = on ? 1 : 0;
}

/* Sends what each dirty entry needs, and frees the ones nobody needs any more. */
static void process_dirty(rl_subscriber *sub) { /* mu held */
    rl_sub_entry *e = sub->dirty;
    sub->dirty = NULL;
    while (e) {
        rl_sub_entry *next = e->dirty_next;
        e->dirty = 0;
        e->dirty_next = NULL;
        if (!e->inflight) {
            const char *cmd = NULL;
            if (e->waiters > 0 && !e->subscribed)
                cmd = sub->sharded ? "SSUBSCRIBE" : "SUBSCRIBE";
            else if (e->waiters == 0 && e->subscribed)
                cmd = sub->sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
            if (cmd && sub->connected) {
                const char *argv[2] = {cmd, e->channel};
                size_t lens[2] = {strlen(cmd), e->len};
                rl_cmd command = {2, argv, lens};
                if (rl_conn_append(&sub->conn, &command) == 0) e->inflight = 1;
            } else if (!cmd && e->waiters == 0 && e->pins == 0) {
                free_entry(sub, e);
            }
        }
        e = next;
    }
}

/* The connection is gone: nothing is subscribed any more. Waiters are woken and will wait for the
 * resubscription, then try again. */
static void connection_lost(rl_subscriber *sub, const char *why) { /* mu held */
    snprintf(sub->last_error, sizeof sub->last_error, "%s", why);
    rl_conn_close(&sub->conn); /* only the thread calls this, never while reading */
    sub->connected = 0;
    for (rl_sub_entry *e = sub->entries; e; e = e->next) {
        set_subscribed(sub, e, 0);
        e->inflight = 0;
        if (sub->sharded) e->moved_gen++; /* a failover may have moved its slot */
        mark_dirty(sub, e);
        entry_changed(e);
    }
}

static void prime(rl_sub_entry *e, rl_sub_ticket *t) { /* mu held */
    rl_sub_ticket **p = &e->primed;
    while (*p)
        p = &(*p)->primed_next;
    *p = t;
    t->primed_next = NULL;
    t->send_state = SEND_PRIMED;
}

static void unprime(rl_sub_entry *e, rl_sub_ticket *t) { /* mu held */
    if (t->send_state != SEND_PRIMED) return;
    rl_sub_ticket **p = &e->primed;
    while (*p != t)
        p = &(*p)->primed_next;
    *p = t->primed_next;
    t->send_state = SEND_IDLE;
}

/* The oldest primed waiter of e takes the message; the thread sends its acquire (send_claimed)
 * before it reads on. */
static void claim_primed(rl_subscriber *sub, rl_sub_entry *e) { /* mu held */
    rl_sub_ticket *t = e->primed;
    e->primed = t->primed_next;
    t->send_state = SEND_CLAIMED;
    t->claimed_next = sub->claimed;
    sub->claimed = t;
}

/* Writes each claimed waiter's acquire on an idle open connection of its pool, without waiting
 * for the answer, then wakes the waiter to read it (and tells its entry's other waiters and
 * observers of the message, as handle_reply does for one not claimed). Without the mutex: the
 * pool's mutex comes before the subscriber's (client.c), and a claimed waiter does not leave before
 * it is done. */
static void send_claimed(rl_subscriber *sub) { /* mu held; dropped meanwhile */
    rl_sub_ticket *list = sub->claimed;
    sub->claimed = NULL;
    if (!list) return;
    pthread_mutex_unlock(&sub->mu);
    for (rl_sub_ticket *t = list; t; t = t->claimed_next) {
        rl_sub_send *s = t->send;
        s->outcome = RL_SUB_SEND_NONE;
        if (s->held_back && s->held_back(s->held_back_arg))
            continue; /* a failover's grace began: the waiter's own try waits it out */
        s->conn = rl_pool_try_take_open(s->pool);
        if (!s->conn) continue;
        s->sent_at = rl_now_ms();
        s->st = rl_conn_send(s->conn, s->timeout_ms, 1, &s->cmd, &s->err);
        if (s->st == RL_OK) {
            s->outcome = RL_SUB_SEND_SENT;
            continue;
        }
        /* Failed (and closed): the waiter's own try again when nothing can have gone out, else
         * the failure of a call that may have run, as the waiter's own call would say it. */
        if (s->conn->maybe_sent) s->outcome = RL_SUB_SEND_FAILED;
        rl_pool_give(s->pool, s->conn);
        s->conn = NULL;
    }
    pthread_mutex_lock(&sub->mu);
    for (rl_sub_ticket *t = list; t; t = t->claimed_next) {
        t->send_state = SEND_DONE;
        entry_changed(t->entry);
    }
}

static int str_is(const redisReply *r, const char *s) {
    size_t n = strlen(s);
    return r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, s, n) == 0;
}

/* Sharded: an error answers a (S)SUBSCRIBE or SUNSUBSCRIBE in flight (MOVED: the node does not
 * serve its slot). Which one is not said: every entry in flight starts over, its waiters at the
 * slot's owner. */
static void handle_error(rl_subscriber *sub) { /* mu held */
    for (rl_sub_entry *e = sub->entries; e; e = e->next) {
        if (!e->inflight) continue;
        e->inflight = 0;
        set_subscribed(sub, e, 0);
        e->moved_gen++;
        mark_dirty(sub, e);
        entry_changed(e);
    }
}

static void handle_reply(rl_subscriber *sub, const redisReply *r) { /* mu held */
    if (r->type == REDIS_REPLY_ERROR && sub->sharded) handle_error(sub);
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) return;
    const redisReply *kind = r->element[0], *channel = r->element[1];
    if (channel->type != REDIS_REPLY_STRING) return;
    rl_sub_entry *e = find_entry(sub, channel->str, channel->len);
    if (!e) return;
    if (str_is(kind, "message") || str_is(kind, "smessage")) {
        e->messages++;
        if (!e->every && str_is(r->element[2], "0")) { /* one waiter may proceed */
            if (e->primed) {
                /* This waiter: its acquire goes out from here, and the entry's waiters are
                 * woken once it is out (send_claimed). Woken now, the claimed one would only
                 * block on the mutex this thread holds, and the unlock before the send would
                 * wait on waking it. */
                claim_primed(sub, e);
                return;
            }
            if (e->permits < (unsigned)e->waiters) e->permits++;
        } else { /* "1" (read/write unlock) and anything else: all may proceed */
            e->wake_all_gen++;
        }
    } else if (str_is(kind, "subscribe") || str_is(kind, "ssubscribe")) {
        e->inflight = 0;
        set_subscribed(sub, e, 1);
        e->sub_gen++;
        mark_dirty(sub, e); /* its waiters may have left meanwhile */
    } else if (str_is(kind, "unsubscribe") || str_is(kind, "sunsubscribe")) {
        /* Not asked for: the node gave the channel's slot away (a migration). */
        if (!e->inflight && sub->sharded) e->moved_gen++;
        e->inflight = 0;
        set_subscribed(sub, e, 0);
        mark_dirty(sub, e);
    } else {
        return;
    }
    entry_changed(e);
}

static int has_waiters(rl_subscriber *sub) {
    for (rl_sub_entry *e = sub->entries; e; e = e->next)
        if (e->waiters > 0) return 1;
    return 0;
}

static void drain_pipe(int fd) {
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

/* Opens the connection when some waiter needs it; returns 0 when the loop should go round. */
static int ensure_connected(rl_subscriber *sub, int64_t *backoff) { /* mu held */
    if (sub->connected) return 1;
    process_dirty(sub); /* frees entries nobody needs */
    if (!has_waiters(sub)) {
        pthread_cond_wait(&sub->thread_wake, &sub->mu);
        return 0;
    }
    pthread_mutex_unlock(&sub->mu);
    rl_error err;
    atomic_store(&sub->in_io, 1);
    rl_status st = rl_conn_open(&sub->conn, sub->cfg->options.command_timeout_ms, &err);
    atomic_store(&sub->in_io, 0);
    pthread_mutex_lock(&sub->mu);
    if (st != RL_OK) {
        snprintf(sub->last_error, sizeof sub->last_error, "%s", err.message);
        if (sub->sharded) /* the node may be gone for good: its waiters ask the map again */
            for (rl_sub_entry *e = sub->entries; e; e = e->next) {
                e->moved_gen++;
                entry_changed(e);
            }
        if (!sub->stop) rl_cond_wait_until(&sub->thread_wake, &sub->mu, rl_now_ms() + *backoff);
        *backoff = *backoff * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : *backoff * 2;
        return 0;
    }
    *backoff = RECONNECT_MIN_MS;
    sub->connected = 1;
    sub->last_error[0] = '\0';
    for (rl_sub_entry *e = sub->entries; e; e = e->next)
        mark_dirty(sub, e);
    return 1;
}

static void *subscriber_main(void *arg) {
    rl_subscriber *sub = arg;
    int64_t backoff = RECONNECT_MIN_MS;
    pthread_mutex_lock(&sub->mu);
    while (!sub->stop) {
        if (!ensure_connected(sub, &backoff)) continue;
        process_dirty(sub);
        pthread_mutex_unlock(&sub->mu);

        /* Network I/O without the mutex; only this thread touches the connection. */
        atomic_store(&sub->in_io, 1);
        int ok = rl_conn_flush(&sub->conn) == 0, readable = rl_conn_buffered(&sub->conn) > 0;
        if (ok && !readable) {
            struct pollfd fds[2] = {{.fd = sub->conn.fd, .events = POLLIN},
                                    {.fd = sub->wake_pipe[0], .events = POLLIN}};
            if (poll(fds, 2, -1) > 0) {
                if (fds[1].revents) drain_pipe(sub->wake_pipe[0]);
                readable = fds[0].revents != 0;
            }
        }
        if (ok && readable) ok = rl_conn_receive(&sub->conn, 0) == 0;
        atomic_store(&sub->in_io, 0);

        pthread_mutex_lock(&sub->mu);
        redisReply *reply;
        while (ok && readable) {
            if (rl_conn_next_reply(&sub->conn, &reply) != 0)
                ok = 0;
            else if (!reply)
                break;
            else {
                handle_reply(sub, reply);
                freeReplyObject(reply);
            }
        }
        if (!ok) connection_lost(sub, sub->conn.why);
        send_claimed(sub);
    }
    connection_lost(sub, "client closed");
    pthread_mutex_unlock(&sub->mu);
    return NULL;
}

void rl_sub_stop(rl_subscriber *sub) {
    pthread_mutex_lock(&sub->mu);
    sub->stop = 1;
    wake_thread(sub);
    for (rl_sub_entry *e = sub->entries; e; e = e->next)
        entry_changed(e);
    int started = sub->thread_started;
    sub->thread_started = 0;
    pthread_mutex_unlock(&sub->mu);
    rl_conn_interrupt(&sub->conn); /* e.g. a connect to an unresponsive server */
    if (started) pthread_join(sub->thread, NULL);
}

static void free_all(rl_subscriber *sub) {
    while (sub->entries) {
        rl_sub_entry *e = sub->entries;
        sub->entries = e->next;
        pthread_cond_destroy(&e->changed);
        free(e);
    }
    sub->dirty = NULL;
    sub->claimed = NULL;
    sub->subscribed_count = 0;
    for (int i = 0; i < 2; i++) {
        if (sub->wake_pipe[i] >= 0) close(sub->wake_pipe[i]);
        sub->wake_pipe[i] = -1;
    }
}

void rl_sub_destroy(rl_subscriber *sub) {
    free_all(sub);
    rl_conn_close(&sub->conn);
    pthread_mutex_destroy(&sub->mu);
    pthread_cond_destroy(&sub->thread_wake);
}

static rl_status join(rl_subscriber *sub, const char *channel, size_t len, int every,
                      rl_sub_ticket *t, void (*notify)(void *), void *notify_userdata,
                      rl_error *err) {
    pthread_mutex_lock(&sub->mu);
    rl_status st = RL_OK;
    if (sub->stop) {
        st = rl_fail(err, RL_ERR_CLOSED, "the client is closed");
        goto out;
    }
    if (!sub->thread_started) {
        if (sub->wake_pipe[0] < 0 && rl_plat_pipe(sub->wake_pipe) != 0) {
            st = rl_fail(err, RL_ERR_MEMORY, "cannot create a pipe: %s", strerror(errno));
            goto out;
        }
        if (rl_thread_start(&sub->thread, subscriber_main, sub) != 0) {
            st = rl_fail(err, RL_ERR_MEMORY, "cannot start the subscriber thread");
            goto out;
        }
        sub->thread_started = 1;
    }
    rl_sub_entry *e = find_entry(sub, channel, len);
    if (!e) {
        e = calloc(1, sizeof *e + len + 1);
        if (!e) {
            st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
            goto out;
        }
        rl_cond_init(&e->changed);
        memcpy(e->channel, channel, len);
        e->len = len;
        e->every = every ? 1 : 0;
        e->next = sub->entries;
        sub->entries = e;
    }
    e->waiters++;
    e->pins++;
    mark_dirty(sub, e);
    wake_thread(sub);
    entry_changed(e); /* a leaver waiting to unsubscribe need wait no more */
    /* sub_seen 0: the first wait returns once subscribed, so the caller tries again after the
     * subscription exists (no release can slip between its try and its wait). */
    *t = (rl_sub_ticket){.sub = sub,
                         .entry = e,
                         .moved_seen = e->moved_gen,
                         .wake_all_seen = e->wake_all_gen,
                         .sub_seen = 0,
                         .unsubscribed_since = -1,
                         .last_hook = rl_now_ms(),
                         .notify = notify,
                         .notify_userdata = notify_userdata};
    if (notify) {
        t->notify_next = e->notified;
        if (e->notified) e->notified->notify_prev = t;
        e->notified = t;
    }
out:
    pthread_mutex_unlock(&sub->mu);
    return st;
}

rl_status rl_sub_join(rl_subscriber *sub, const char *channel, size_t len, rl_sub_ticket *t,
                      rl_error *err) {
    return join(sub, channel, len, 0, t, NULL, NULL, err);
}

rl_status rl_sub_join_notified(rl_subscriber *sub, const char *channel, size_t len,
                               rl_sub_ticket *t, void (*notify)(void *), void *userdata,
                               rl_error *err) {
    return join(sub, channel, len, 0, t, notify, userdata, err);
}

rl_status rl_sub_join_notified_every(rl_subscriber *sub, const char *channel, size_t len,
                                     rl_sub_ticket *t, void (*notify)(void *), void *userdata,
                                     rl_error *err) {
    return join(sub, channel, len, 1, t, notify, userdata, err);
}

rl_status rl_sub_join_every(rl_subscriber *sub, const char *channel, size_t len, rl_sub_ticket *t,
                            rl_error *err) {
    return join(sub, channel, len, 1, t, NULL, NULL, err);
}

/* Whether the ticket was woken (1), not yet (0), or its wait failed (-1, *st set). mu held. */
static int check_ticket(rl_subscriber *sub, rl_sub_ticket *t, int64_t now, rl_status *st,
                        rl_error *err) {
    rl_sub_entry *e = t->entry;
    const rl_options *o = &sub->cfg->options;
    if (t->send_state == SEND_DONE) return 1;    /* its acquire was sent (or not): read it */
    if (t->send_state == SEND_CLAIMED) return 0; /* being sent: nothing else ends this wait */
    if (sub->stop) {
        *st = rl_fail(err, RL_ERR_CLOSED, "the client is closed");
        return -1;
    }
    if (e->moved_gen != t->moved_seen) { /* sharded: join again at the slot's owner */
        t->moved_seen = e->moved_gen;
        t->moved = 1;
        return 1;
    }
    if (e->subscribed) {
        t->unsubscribed_since = -1;
        if (t->observing) {
            if (e->messages <= t->messages_seen) return 0;
            t->messages_seen = e->messages;
            return 1;
        }
        if (e->sub_gen != t->sub_seen) {
            t->sub_seen = e->sub_gen;
            t->wake_all_seen = e->wake_all_gen;
            return 1;
        }
        if (e->permits > 0) {
            e->permits--;
            return 1;
        }
        if (e->wake_all_gen != t->wake_all_seen) {
            t->wake_all_seen = e->wake_all_gen;
            return 1;
        }
    } else if (t->unsubscribed_since < 0) {
        t->unsubscribed_since = now;
    } else if (now - t->unsubscribed_since > o->connect_timeout_ms + o->command_timeout_ms) {
        *st = rl_fail(err, RL_ERR_CONNECTION, "cannot subscribe to lock notifications: %s",
                      sub->last_error[0] ? sub->last_error : "no answer");
        return -1;
    }
    return 0;
}

/* When a blocked waiter must look again though nothing changed (every change broadcasts
 * e->changed): its deadline, the end of its patience without a subscription, and, with a hook, the
 * next slice. Without one it sleeps: ten thousand waiting threads cost no CPU. mu held. */
static int64_t next_wake(rl_subscriber *sub, const rl_sub_ticket *t, int64_t now, int64_t until_ms,
                         int has_hook) {
    const rl_options *o = &sub->cfg->options;
    int64_t wake = now + (has_hook ? WAIT_SLICE_MS : IDLE_WAIT_MS);
    if (until_ms >= 0 && until_ms < wake) wake = until_ms;
    if (t->unsubscribed_since >= 0) {
        int64_t give_up = t->unsubscribed_since + o->connect_timeout_ms + o->command_timeout_ms + 1;
        if (give_up < wake) wake = give_up;
    }
    return wake;
}

rl_status rl_sub_wait(rl_subscriber *sub, rl_sub_ticket *t, int64_t until_ms, rl_wait_hook hook,
                      void *hook_userdata, rl_error *err) {
    rl_sub_entry *e = t->entry;
    rl_status st = RL_OK;
    pthread_mutex_lock(&sub->mu);
    if (t->send) {
        t->send->outcome = RL_SUB_SEND_NONE;
        prime(e, t);
    }
    for (;;) {
        int64_t now = rl_now_ms();
        int woken = check_ticket(sub, t, now, &st, err);
        if (woken != 0) {
            if (woken > 0) st = RL_OK;
            break;
        }
        if (t->send_state == SEND_CLAIMED) { /* its acquire is going out: wait for that */
            pthread_cond_wait(&e->changed, &sub->mu);
            continue;
        }
        if (until_ms >= 0 && now >= until_ms) {
            st = RL_NOT_ACQUIRED;
            break;
        }
        if (hook && now - t->last_hook >= WAIT_SLICE_MS) {
            t->last_hook = now;
            unprime(e, t); /* an abort must find nothing sent */
            pthread_mutex_unlock(&sub->mu);
            int stop = hook(hook_userdata);
            pthread_mutex_lock(&sub->mu);
            if (stop) {
                st = rl_fail(err, RL_ABORTED, "the wait was interrupted");
                break;
            }
            if (t->send) prime(e, t);
            continue;
        }
        rl_cond_wait_until(&e->changed, &sub->mu, next_wake(sub, t, now, until_ms, hook != NULL));
    }
    unprime(e, t);
    t->send_state = SEND_IDLE;
    pthread_mutex_unlock(&sub->mu);
    return st;
}

rl_status rl_sub_poll(rl_subscriber *sub, rl_sub_ticket *t, int64_t *recheck_at_ms, rl_error *err) {
    const rl_options *o = &sub->cfg->options;
    rl_status st = RL_NOT_ACQUIRED;
    *recheck_at_ms = -1;
    pthread_mutex_lock(&sub->mu);
    int woken = check_ticket(sub, t, rl_now_ms(), &st, err);
    if (woken > 0) st = RL_OK;
    if (woken == 0 && t->unsubscribed_since >= 0)
        *recheck_at_ms = t->unsubscribed_since + o->connect_timeout_ms + o->command_timeout_ms + 1;
    pthread_mutex_unlock(&sub->mu);
    return st;
}

void rl_sub_observe(rl_subscriber *sub, rl_sub_ticket *t, int on, uint64_t floor) {
    rl_sub_entry *e = t->entry;
    pthread_mutex_lock(&sub->mu);
    t->observing = on;
    if (on)
        t->messages_seen = e->messages > floor ? e->messages : floor;
    else if (e->subscribed)
        t->sub_seen = e->sub_gen; /* tries from now on follow the subscription: none missed */
    pthread_mutex_unlock(&sub->mu);
}

int64_t rl_sub_messages_read(rl_subscriber *sub, const char *channel, size_t len) {
    pthread_mutex_lock(&sub->mu);
    rl_sub_entry *e = find_entry(sub, channel, len);
    /* Waited on and no UNSUBSCRIBE pending: a message published from now on reaches it. */
    int64_t n = e && e->subscribed && !e->inflight && e->waiters > 0 ? (int64_t)e->messages : -1;
    pthread_mutex_unlock(&sub->mu);
    return n;
}

void rl_sub_leave(rl_subscriber *sub, rl_sub_ticket *t) {
    rl_sub_entry *e = t->entry;
    pthread_mutex_lock(&sub->mu);
    if (t->notify) {
        if (t->notify_prev)
            t->notify_prev->notify_next = t->notify_next;
        else
            e->notified = t->notify_next;
        if (t->notify_next) t->notify_next->notify_prev = t->notify_prev;
        t->notify = NULL;
    }
    e->waiters--;
    if (e->permits > (unsigned)e->waiters) e->permits = (unsigned)e->waiters;
    /* The last waiter's UNSUBSCRIBE is sent by the thread; nobody waits for its confirmation
     * (a holder must not wait on it), and a waiter joining meanwhile subscribes again once it
     * is confirmed. The thread frees the entry when nobody needs it. While waiters are left,
     * the thread has nothing to do. Its pipe is written after the mutex is let go: woken
     * while this thread (a new holder on its way out of acquire) still held it, it would only
     * block on it, and cost this thread a wake-up call at the unlock. The pipe outlives this
     * call: the client is not freed while a call is in progress. */
    --e->pins;
    int fd = -1;
    if (e->waiters == 0) {
        mark_dirty(sub, e);
        pthread_cond_signal(&sub->thread_wake);
        fd = sub->wake_pipe[1];
    }
    pthread_mutex_unlock(&sub->mu);
    rl_plat_pipe_poke(fd);
    t->entry = NULL;
}

size_t rl_sub_count(rl_subscriber *sub) {
    pthread_mutex_lock(&sub->mu);
    size_t n = sub->subscribed_count;
    pthread_mutex_unlock(&sub->mu);
    return n;
}

void rl_sub_after_fork_child(rl_subscriber *sub) {
    rl_cond_init(&sub->thread_wake);
    for (rl_sub_entry *e = sub->entries; e; e = e->next)
        rl_cond_init(&e->changed);
}

void rl_sub_forget_after_fork(rl_subscriber *sub) {
    if (atomic_load(&sub->in_io))
        rl_conn_abandon(&sub->conn);
    else
        rl_conn_close(&sub->conn);
    atomic_store(&sub->in_io, 0);
    free_all(sub);
    sub->connected = 0;
    sub->thread_started = 0;
    sub->stop = 0;
    sub->last_error[0] = '\0';
}
