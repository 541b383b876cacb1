#include "sentinel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "sentinel_watch.h"

#define ASK_AT_MOST_EVERY_MS 100 /* a burst of doubts (every connection failing) asks once */

struct rl_sentinel {
    rl_config *cfg;
    pthread_mutex_t mu;
    char host[256]; /* the master now; "" until known */
    int port;
    uint64_t epoch; /* bumped with every new address */
    int doubted;
    int64_t asked_at;
    /* No sentinel could be asked the last time: the master known is used (ROLE checks it on
     * every connection) and the watcher asks in the background, until a sentinel answers. */
    int down;
    int asking; /* an ask is under way: a known master is used meanwhile */
    /* One ask at a time, held during its I/O (taken before mu). Its connection is the
     * sentinel's own so that closing the client can cut it short (rl_sentinel_stop). */
    pthread_mutex_t ask_mu;
    rl_conn ask_conn;
    void (*moved)(void *);
    void *moved_userdata;
    rl_sentinel_watch *watch; /* +switch-master from every sentinel (sentinel_watch.c) */
    atomic_int stop;
};

static void switched(void *state, const char *payload);
static void ask_in_background(void *state);

rl_status rl_sentinel_new(rl_config *cfg, rl_sentinel **out, rl_error *err) {
    rl_sentinel *s = calloc(1, sizeof *s);
    if (!s) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    s->cfg = cfg;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->ask_mu, NULL);
    atomic_init(&s->stop, 0);
    rl_conn_init(&s->ask_conn, cfg);
    s->watch =
        rl_sentinel_watch_new(cfg, (rl_sentinel_watch_hooks){switched, ask_in_background, s});
    if (!s->watch) {
        pthread_mutex_destroy(&s->ask_mu);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    *out = s;
    return RL_OK;
}

void rl_sentinel_on_moved(rl_sentinel *s, void (*moved)(void *), void *userdata) {
    s->moved = moved;
    s->moved_userdata = userdata;
}

uint64_t rl_sentinel_epoch(rl_sentinel *s) {
    pthread_mutex_lock(&s->mu);
    uint64_t e = s->epoch;
    pthread_mutex_unlock(&s->mu);
    return e;
}

void rl_sentinel_doubt(rl_sentinel *s, uint64_t epoch) {
    pthread_mutex_lock(&s->mu);
    if (epoch == s->epoch) s->doubted = 1;
    pthread_mutex_unlock(&s->mu);
}

/* Takes a new address (mu held); 1 when it differs from the one known. */
static int set_master(rl_sentinel *s, const char *host, int port) {
    s->doubted = 0;
    s->down = 0;
    if (s->host[0] && strcmp(s->host, host) == 0 && s->port == port) return 0;
    int had = s->host[0] != '\0';
    snprintf(s->host, sizeof s->host, "%s", host);
    s->port = port;
    s->epoch++;
    return had;
}

static void moved(rl_sentinel *s) {
    if (s->moved && !atomic_load(&s->stop)) s->moved(s->moved_userdata);
}

/* ---- asking the sentinels ------------------------------------------------------------------ */

static int closing(const rl_sentinel *s) {
    return atomic_load(&s->stop) || atomic_load(&s->cfg->closing);
}

/* SENTINEL get-master-addr-by-name on sentinel i, on ask_conn (ask_mu held): 1 with the address,
 * 0 when it knows no such master, -1 when it cannot be asked (why in err). Sent and read without
 * the exchange's retry, whose reopening would go to the master. */
static int ask_one(rl_sentinel *s, int i, char *host, size_t host_size, int *port, rl_error *err) {
    rl_conn *c = &s->ask_conn;
    rl_target t = rl_sentinel_target(s->cfg, i);
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name", s->cfg->endpoint.master_name};
    size_t lens[3] = {8, 23, strlen(argv[2])};
    rl_cmd cmd = {3, argv, lens};
    redisReply *reply = NULL;
    int64_t timeout = s->cfg->options.command_timeout_ms;
    rl_status st = rl_conn_open_to(c, &t, timeout, err);
    if (st == RL_OK) st = rl_conn_send(c, timeout, 1, &cmd, err);
    if (st == RL_OK) st = rl_conn_receive_replies(c, 1, &reply, err);
    rl_conn_close(c);
    if (st != RL_OK) return -1;
    int found = 0;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        reply->element[1]->type == REDIS_REPLY_STRING) {
        snprintf(host, host_size, "%s", reply->element[0]->str);
        *port = atoi(reply->element[1]->str);
        found = *port > 0 ? 1 : -1;
    } else if (reply->type == REDIS_REPLY_ERROR) {
        rl_fail_reply(err, "SENTINEL get-master-addr-by-name", reply);
        found = -1;
    }
    freeReplyObject(reply);
    return found;
}

/* Asks the sentinels in order until one names the master; after budget_ms (0: none) no further
 * sentinel is tried. *reached: how many answered. */
static rl_status ask(rl_sentinel *s, int64_t budget_ms, char *host, size_t host_size, int *port,
                     int *reached, rl_error *err) {
    char reasons[sizeof err->message] = "";
    int unknown = 0;
    const rl_endpoint *ep = &s->cfg->endpoint;
    int64_t started = rl_now_ms();
    *reached = 0;
    for (int i = 0; i < ep->sentinels && !closing(s); i++) {
        if (i > 0 && budget_ms > 0 && rl_now_ms() - started >= budget_ms) break;
        rl_error one;
        int found = ask_one(s, i, host, host_size, port, &one);
        if (found == 1) {
            *reached = 1;
            return RL_OK;
        }
        if (found == 0)
            unknown++;
        else if (!reasons[0])
            snprintf(reasons, sizeof reasons, "%s", one.message);
    }
    *reached = unknown;
    if (closing(s)) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    if (unknown > 0)
        return rl_fail(err, RL_ERR_CONNECTION, "the sentinels know no master named \"%s\"",
                       ep->master_name);
    return rl_fail(err, RL_ERR_CONNECTION, "no sentinel could be asked for master \"%s\" (%s)",
                   ep->master_name, reasons[0] ? reasons : "closed");
}

/* Asks (one ask at a time) and takes the answer. Unless `force`, a master named while this
 * thread waited its turn (by another thread's ask) is enough. *reached: how many sentinels
 * answered. */
static rl_status ask_and_take(rl_sentinel *s, int force, int64_t budget_ms, int *reached,
                              rl_error *err) {
    pthread_mutex_lock(&s->ask_mu);
    pthread_mutex_lock(&s->mu);
    int answered = !force && s->host[0] && !s->doubted;
    if (!answered) {
        s->asking = 1;
        s->asked_at = rl_now_ms();
    }
    pthread_mutex_unlock(&s->mu);
    *reached = 1;
    if (answered) {
        pthread_mutex_unlock(&s->ask_mu);
        return RL_OK;
    }
    char host[256];
    int port = 0;
    rl_status st = ask(s, budget_ms, host, sizeof host, &port, reached, err);
    int changed = 0;
    pthread_mutex_lock(&s->mu);
    s->asking = 0;
    if (st == RL_OK)
        changed = set_master(s, host, port);
    else if (st == RL_ERR_CONNECTION && *reached == 0)
        s->down = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->ask_mu);
    if (changed) moved(s);
    return st;
}

/* Wakes a watcher to ask in the background. */
static void poke(rl_sentinel *s) {
    rl_sentinel_watch_poke(s->watch);
}

static void start_watcher(rl_sentinel *s) {
    if (!atomic_load(&s->stop)) rl_sentinel_watch_start(s->watch);
}

rl_status rl_sentinel_master(rl_sentinel *s, char *host, size_t host_size, int *port,
                             uint64_t *epoch, rl_error *err) {
    pthread_mutex_lock(&s->mu);
    int64_t now = rl_now_ms();
    int known = s->host[0] != '\0';
    int due = s->doubted && now - s->asked_at >= ASK_AT_MOST_EVERY_MS;
    /* With a master known, nobody waits for sentinels already being asked, nor for sentinels
     * found down: the watcher asks them in the background, and the master known is used
     * meanwhile (ROLE on connect refuses it if it is no longer the master). */
    int behind = known && due && (s->asking || (s->down && rl_sentinel_watch_started(s->watch)));
    int ask_now = !known || (due && !behind);
    if (behind && !s->asking) {
        s->asked_at = now;
        poke(s);
    }
    pthread_mutex_unlock(&s->mu);
    if (ask_now) {
        /* A master known: no further sentinel is tried after a command's timeout. */
        int reached;
        rl_status st =
            ask_and_take(s, 0, known ? s->cfg->options.command_timeout_ms : 0, &reached, err);
        if (st != RL_OK && (st == RL_ERR_CLOSED || !known || reached > 0)) return st;
        start_watcher(s);
        if (st != RL_OK) poke(s); /* the sentinels are down: the master known, asked later */
    }
    pthread_mutex_lock(&s->mu);
    snprintf(host, host_size, "%s", s->host);
    *port = s->port;
    *epoch = s->epoch;
    pthread_mutex_unlock(&s->mu);
    return RL_OK;
}

static rl_status resolve(void *state, rl_target *t, char *host, size_t host_size, rl_error *err) {
    rl_status st = rl_sentinel_master(state, host, host_size, &t->port, &t->epoch, err);
    t->host = host;
    t->must_be_master = 1;
    return st;
}

static void doubt(void *state, uint64_t epoch) {
    rl_sentinel_doubt(state, epoch);
}

static uint64_t epoch_now(void *state) {
    return rl_sentinel_epoch(state);
}

const rl_resolver rl_sentinel_resolver = {resolve, doubt, epoch_now};

/* ---- what the watchers hear ------------------------------------------------------------ */

/* "<master name> <old ip> <old port> <new ip> <new port>" for our master: takes the new one. */
static void switched(void *state, const char *payload) {
    rl_sentinel *s = state;
    char name[256], old_host[256], new_host[256];
    int old_port, new_port;
    if (sscanf(payload, "%255s %255s %d %255s %d", name, old_host, &old_port, new_host,
               &new_port) != 5 ||
        strcmp(name, s->cfg->endpoint.master_name) != 0)
        return;
    pthread_mutex_lock(&s->mu);
    int changed = set_master(s, new_host, new_port);
    pthread_mutex_unlock(&s->mu);
    if (changed) moved(s);
}

static void ask_in_background(void *state) {
    int reached;
    rl_error err;
    ask_and_take(state, 1, 0, &reached, &err);
}

void rl_sentinel_stop(rl_sentinel *s) {
    if (!s) return;
    atomic_store(&s->stop, 1);
    rl_conn_interrupt(&s->ask_conn); /* an ask under way, on any thread, ends now */
    rl_sentinel_watch_stop(s->watch);
}

void rl_sentinel_free(rl_sentinel *s) {
    if (!s) return;
    rl_sentinel_stop(s);
    rl_sentinel_watch_free(s->watch);
    rl_conn_close(&s->ask_conn);
    pthread_mutex_destroy(&s->ask_mu);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void rl_sentinel_lock(rl_sentinel *s) {
    if (s) pthread_mutex_lock(&s->mu);
}

void rl_sentinel_unlock(rl_sentinel *s) {
    if (s) pthread_mutex_unlock(&s->mu);
}

void rl_sentinel_forget_after_fork(rl_sentinel *s) {
    rl_sentinel_watch_forget_after_fork(s->watch);
    rl_conn_abandon(&s->ask_conn);
    pthread_mutex_init(&s->ask_mu, NULL); /* a parent's thread may have held it */
    s->asking = 0;
    s->doubted = 1; /* the child asks again */
}
