#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "server_version.h"

#define REFRESH_MIN_MS 100 /* at most one map refresh this often */
#define RETRY_MIN_MS 20    /* TRYAGAIN, CLUSTERDOWN, an unreachable node: back-off from ... */
#define RETRY_MAX_MS 500   /* ... to */
#define MOST_REDIRECTS 16  /* MOVED/ASK followed per call before giving up */

struct rl_cluster {
    rl_config *cfg;
    pthread_mutex_t mu; /* the map, the node list, the refresh's state; never held during I/O */
    /* One refresh at a time: `refreshing` is set while one asks the nodes (mu let go), and the
     * others wait for it on refresh_done, each no longer than its own deadline. */
    int refreshing;
    pthread_cond_t refresh_done;
    rl_conn fetch; /* the refresh's connection (refreshing set): closing cuts it short */
    rl_conn poll;  /* rl_cluster_poll's (the watchdog thread's): a slow node holds up no refresh */
    rl_cluster_node *nodes;
    rl_cluster_node *owner[RL_SLOTS];
    int64_t refreshed_at; /* monotonic ms of the last refresh that got an answer; 0: never */
    int64_t failed_at;    /* ... of the last that got none; its error: */
    rl_error failure;
    int stale; /* a node was unreachable and no time was left to ask the map */
    uint64_t refreshes;
    unsigned polls;               /* rl_cluster_poll's turn among the known nodes */
    rl_cluster_moved_fn on_moved; /* set once, before any call */
    void *on_moved_userdata;
};

/* Marks `slot` in `changed` when it had an owner and now has another (or none). */
static int note_change(uint64_t *changed, int slot, const rl_cluster_node *was,
                       const rl_cluster_node *now) {
    if (!was || was == now) return 0;
    changed[slot / 64] |= (uint64_t)1 << (slot % 64);
    return 1;
}

/* Tells the deployment which slots changed owner; called with no cluster mutex held (during a
 * refresh: the callback only sets flags). */
static void tell_moved(rl_cluster *cl, const uint64_t *changed, int any) {
    if (any && cl->on_moved) cl->on_moved(cl->on_moved_userdata, changed);
}

void rl_cluster_on_moved(rl_cluster *cl, rl_cluster_moved_fn fn, void *userdata) {
    cl->on_moved = fn;
    cl->on_moved_userdata = userdata;
}

rl_status rl_cluster_new(rl_config *cfg, rl_cluster **out, rl_error *err) {
    rl_cluster *cl = calloc(1, sizeof *cl);
    if (!cl) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    cl->cfg = cfg;
    pthread_mutex_init(&cl->mu, NULL);
    rl_cond_init(&cl->refresh_done);
    rl_conn_init(&cl->fetch, cfg);
    rl_conn_init(&cl->poll, cfg);
    *out = cl;
    return RL_OK;
}

void rl_cluster_stop(rl_cluster *cl) {
    if (!cl) return;
    pthread_mutex_lock(&cl->mu);
    rl_cluster_node *nodes = cl->nodes;
    pthread_mutex_unlock(&cl->mu);
    rl_conn_interrupt(&cl->fetch);
    rl_conn_interrupt(&cl->poll);
    for (rl_cluster_node *n = nodes; n; n = n->next) {
        rl_pool_close(&n->pool);
        rl_pool_interrupt(&n->pool);
        rl_sub_stop(&n->sub);
        rl_conn_interrupt(&n->renew);
    }
}

void rl_cluster_free(rl_cluster *cl) {
    if (!cl) return;
    while (cl->nodes) {
        rl_cluster_node *n = cl->nodes;
        cl->nodes = n->next;
        rl_pool_destroy(&n->pool);
        rl_sub_destroy(&n->sub);
        rl_conn_close(&n->renew);
        free(n);
    }
    rl_conn_close(&cl->fetch);
    rl_conn_close(&cl->poll);
    pthread_mutex_destroy(&cl->mu);
    pthread_cond_destroy(&cl->refresh_done);
    free(cl);
}

static rl_cluster_node *find_node(rl_cluster *cl, const char *host, int port) { /* mu held */
    for (rl_cluster_node *n = cl->nodes; n; n = n->next)
        if (n->port == port && strcmp(n->host, host) == 0) return n;
    return NULL;
}

static rl_cluster_node *node_at(rl_cluster *cl, const char *host, int port) { /* mu held */
    rl_cluster_node *n = find_node(cl, host, port);
    if (n || strlen(host) >= sizeof n->host) return n;
    n = calloc(1, sizeof *n);
    if (!n || rl_pool_init(&n->pool, cl->cfg->options.pool_size, cl->cfg) != 0) {
        free(n);
        return NULL;
    }
    strcpy(n->host, host);
    n->port = port;
    for (int i = 0; i < n->pool.size; i++) {
        n->pool.conns[i].node_host = n->host;
        n->pool.conns[i].node_port = port;
    }
    rl_sub_init(&n->sub, cl->cfg);
    n->sub.conn.node_host = n->host;
    n->sub.conn.node_port = port;
    n->sub.sharded = 1;
    rl_conn_init(&n->renew, cl->cfg);
    n->renew.node_host = n->host;
    n->renew.node_port = port;
    if (atomic_load(&cl->cfg->closing)) { /* made after rl_cluster_stop: born stopped */
        n->sub.stop = 1;
        rl_pool_close(&n->pool);
    }
    n->next = cl->nodes;
    cl->nodes = n;
    return n;
}

rl_cluster_node *rl_cluster_node_at(rl_cluster *cl, const char *host, int port) {
    pthread_mutex_lock(&cl->mu);
    rl_cluster_node *n = node_at(cl, host, port);
    pthread_mutex_unlock(&cl->mu);
    return n;
}

rl_cluster_node *rl_cluster_nodes(rl_cluster *cl) {
    pthread_mutex_lock(&cl->mu);
    rl_cluster_node *n = cl->nodes;
    pthread_mutex_unlock(&cl->mu);
    return n;
}

uint64_t rl_cluster_refreshes(rl_cluster *cl) {
    pthread_mutex_lock(&cl->mu);
    uint64_t n = cl->refreshes;
    pthread_mutex_unlock(&cl->mu);
    return n;
}

/* ---- the map, from CLUSTER SLOTS ----------------------------------------------------------- */

static int is_int(const redisReply *r) {
    return r && r->type == REDIS_REPLY_INTEGER;
}

/* Applies one CLUSTER SLOTS answer got from `asked`; -1 when it is not one. Marks the slots whose
 * owner changed in `changed` (*any set when one did). */
static int apply_slots(rl_cluster *cl, const redisReply *r, const char *asked, uint64_t *changed,
                       int *any) { /* mu held */
    if (r->type != REDIS_REPLY_ARRAY) return -1;
    rl_cluster_node *owner[RL_SLOTS] = {0};
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3) return -1;
        const redisReply *from = range->element[0], *to = range->element[1],
                         *master = range->element[2];
        if (!is_int(from) || !is_int(to) || from->integer < 0 || to->integer >= RL_SLOTS ||
            master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
            (master->element[0]->type != REDIS_REPLY_STRING &&
             master->element[0]->type != REDIS_REPLY_NIL) ||
            !is_int(master->element[1]))
            return -1;
        /* No host (nil: Redis 7's unknown-endpoint), an empty or "?" one: the node does not say
         * its address; it is the one asked. */
        const char *host = master->element[0]->str;
        if (!host || host[0] == '\0' || strcmp(host, "?") == 0) host = asked;
        rl_cluster_node *n = node_at(cl, host, (int)master->element[1]->integer);
        if (!n) return -1;
        for (long long s = from->integer; s <= to->integer; s++)
            owner[s] = n;
    }
    for (int s = 0; s < RL_SLOTS; s++)
        *any |= note_change(changed, s, cl->owner[s], owner[s]);
    memcpy(cl->owner, owner, sizeof owner);
    return 0;
}

/* Asks one node for the map, and its version (a node without sharded pub/sub is refused), in
 * one round trip on `conn` (the refresh's, refreshing set; or the poll's), ending by `deadline`
 * (INT64_MAX: its full timeouts): RL_OK (applied), or why not. */
static rl_status ask_node(rl_cluster *cl, rl_conn *conn, const char *host, int port,
                          int64_t deadline, rl_error *err) {
    int64_t timeout = cl->cfg->options.command_timeout_ms;
    if (deadline != INT64_MAX && deadline - rl_now_ms() < timeout) timeout = deadline - rl_now_ms();
    if (timeout <= 0)
        return rl_fail(err, RL_ERR_CONNECTION, "%s:%d: not asked, the call's time is up", host,
                       port);
    conn->node_host = host;
    conn->node_port = port;
    conn->connect_by = deadline == INT64_MAX ? 0 : deadline;
    const char *slots_argv[2] = {"CLUSTER", "SLOTS"}, *info_argv[2] = {"INFO", "SERVER"};
    size_t lens[2] = {7, 5}, info_lens[2] = {4, 6};
    rl_cmd cmds[2] = {{2, slots_argv, lens}, {2, info_argv, info_lens}};
    redisReply *replies[2] = {NULL, NULL}, *reply;
    rl_status st = rl_conn_exchange(conn, timeout, 2, cmds, replies, 1, err);
    rl_conn_close(conn);
    conn->node_host = NULL; /* host is the caller's */
    conn->connect_by = 0;
    if (st != RL_OK) return st;
    reply = replies[0];
    if (reply->type == REDIS_REPLY_ERROR) {
        if (strstr(reply->str, "cluster support disabled"))
            st = rl_fail(err, RL_ERR_ARGUMENT,
                         "%s:%d is not in cluster mode (cluster support disabled): use a "
                         "redis:// URL for it",
                         host, port);
        else
            st = rl_fail_reply(err, "CLUSTER SLOTS", reply);
    } else if ((st = rl_server_has_sharded_pubsub(replies[1], host, port, err)) == RL_OK) {
        uint64_t changed[RL_SLOTS / 64] = {0};
        int any = 0;
        pthread_mutex_lock(&cl->mu);
        rl_cluster_node *asked = find_node(cl, host, port);
        if (asked) asked->failed_at = 0; /* it answers again */
        if (apply_slots(cl, reply, host, changed, &any) != 0)
            st = rl_fail(err, RL_ERR_SERVER, "unexpected answer to CLUSTER SLOTS from %s:%d", host,
                         port);
        else
            cl->refreshes++;
        pthread_mutex_unlock(&cl->mu);
        tell_moved(cl, changed, any);
    }
    freeReplyObject(reply);
    freeReplyObject(replies[1]);
    return st;
}

/* The seeds and every node known, as (host, port) copies to ask in turn. */
typedef struct candidate {
    char host[256];
    int port;
} candidate;

static void add_candidate(candidate *c, size_t *k, const char *host, int port) {
    snprintf(c[*k].host, sizeof c[*k].host, "%s", host);
    c[(*k)++].port = port;
}

static size_t candidates(rl_cluster *cl, candidate **out) {
    const rl_endpoint *ep = &cl->cfg->endpoint;
    pthread_mutex_lock(&cl->mu);
    size_t n = (size_t)ep->seeds;
    for (rl_cluster_node *node = cl->nodes; node; node = node->next)
        n++;
    candidate *c = calloc(n ? n : 1, sizeof *c);
    size_t k = 0;
    /* Known nodes first (they served the map last), then the seeds, then the nodes found
     * unreachable: a node cut off would take the connect timeout that another answers in. */
    for (rl_cluster_node *node = cl->nodes; c && node; node = node->next)
        if (!node->failed_at) add_candidate(c, &k, node->host, node->port);
    for (int i = 0; c && i < ep->seeds; i++) {
        rl_cluster_node *known = find_node(cl, ep->seed_hosts[i], ep->seed_ports[i]);
        if (!known || !known->failed_at) add_candidate(c, &k, ep->seed_hosts[i], ep->seed_ports[i]);
    }
    for (rl_cluster_node *node = cl->nodes; c && node; node = node->next)
        if (node->failed_at) add_candidate(c, &k, node->host, node->port);
    pthread_mutex_unlock(&cl->mu);
    *out = c;
    return c ? k : 0;
}

/* Now plus what one Redis gives a call: the end of a refresh that is not the first. */
static int64_t call_deadline(const rl_cluster *cl) {
    return rl_now_ms() + cl->cfg->options.connect_timeout_ms + cl->cfg->options.command_timeout_ms;
}

static void wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline) {
    if (deadline == INT64_MAX)
        pthread_cond_wait(cond, mu);
    else
        rl_cond_wait_until(cond, mu, deadline);
}

/* Refreshes the map unless one got an answer after `since` (another thread's, while this one
 * waited its turn) or within REFRESH_MIN_MS; by `deadline` (INT64_MAX: every candidate with its
 * full timeouts), a wait for another thread's refresh included. */
static rl_status refresh(rl_cluster *cl, int64_t since, int64_t deadline, rl_error *err) {
    pthread_mutex_lock(&cl->mu);
    while (cl->refreshing && rl_now_ms() < deadline)
        wait_until(&cl->refresh_done, &cl->mu, deadline);
    int64_t last = cl->refreshed_at, now = rl_now_ms();
    rl_status st = RL_OK;
    int mine = 0; /* this thread asks the nodes */
    if (last && (last > since || now - last < REFRESH_MIN_MS)) {
        /* answered after `since`, or a moment ago */
    } else if (cl->failed_at && now - cl->failed_at < REFRESH_MIN_MS) {
        /* No node answered a moment ago: say so again rather than ask every node per call. */
        st = rl_fail(err, cl->failure.status, "%s", cl->failure.message);
    } else if (cl->refreshing || now >= deadline) {
        cl->stale = 1; /* asked by a later call or round (rl_cluster_ask_if_stale) */
        st = rl_fail(err, RL_ERR_CONNECTION,
                     cl->refreshing ? "the cluster's map is being asked, past the call's time"
                                    : "no time left to ask the cluster's map");
    } else {
        st = RL_ERR_CONNECTION;
        cl->refreshing = mine = 1;
        cl->stale = 0;
    }
    pthread_mutex_unlock(&cl->mu);
    if (!mine) return st;

    candidate *c;
    size_t n = candidates(cl, &c);
    if (!n) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_error last_err = {0};
    for (size_t i = 0; i < n && st != RL_OK && st != RL_ERR_CLOSED; i++) {
        if (deadline != INT64_MAX && rl_now_ms() >= deadline) break;
        st = ask_node(cl, &cl->fetch, c[i].host, c[i].port, deadline, &last_err);
        /* A node not in cluster mode (a wrong URL), or too old: the others will not differ. */
        if (st == RL_ERR_ARGUMENT || st == RL_ERR_UNSUPPORTED) break;
    }
    free(c);
    pthread_mutex_lock(&cl->mu);
    if (st == RL_OK) {
        cl->failed_at = 0;
        cl->refreshed_at = rl_now_ms();
    } else if (n) {
        st = st == RL_ERR_CONNECTION
                 ? rl_fail(&cl->failure, st, "no cluster node answered CLUSTER SLOTS (last: %s)",
                           last_err.message[0] ? last_err.message : "none asked in time")
                 : rl_fail(&cl->failure, st, "%s", last_err.message);
        rl_fail(err, st, "%s", cl->failure.message);
        cl->failed_at = rl_now_ms();
    }
    cl->refreshing = 0;
    pthread_cond_broadcast(&cl->refresh_done);
    pthread_mutex_unlock(&cl->mu);
    return st;
}

rl_cluster_node *rl_cluster_owner(rl_cluster *cl, int slot, rl_error *err) {
    int64_t asked = rl_now_ms();
    for (int attempt = 0; attempt < 2; attempt++) {
        pthread_mutex_lock(&cl->mu);
        rl_cluster_node *n = cl->owner[slot];
        int first = cl->refreshed_at == 0;
        pthread_mutex_unlock(&cl->mu);
        if (n) return n;
        if (attempt == 1) break;
        if (refresh(cl, asked, first ? INT64_MAX : call_deadline(cl), err) != RL_OK) return NULL;
    }
    rl_fail(err, RL_ERR_CONNECTION, "no cluster node serves slot %d (CLUSTERDOWN?)", slot);
    return NULL;
}

void rl_cluster_moved(rl_cluster *cl, int slot, const char *host, int port) {
    int64_t seen = rl_now_ms();
    uint64_t changed[RL_SLOTS / 64] = {0};
    int any = 0;
    pthread_mutex_lock(&cl->mu);
    rl_cluster_node *n = node_at(cl, host, port);
    if (n) {
        any = note_change(changed, slot, cl->owner[slot], n);
        cl->owner[slot] = n;
    }
    pthread_mutex_unlock(&cl->mu);
    tell_moved(cl, changed, any);
    rl_error ignored;
    refresh(cl, seen, call_deadline(cl), &ignored); /* other slots may have moved too */
}

int rl_cluster_unreachable(rl_cluster *cl, int slot, rl_cluster_node *was, int64_t deadline) {
    rl_error ignored;
    int64_t seen = rl_now_ms();
    if (was) {
        pthread_mutex_lock(&cl->mu);
        was->failed_at = seen;
        pthread_mutex_unlock(&cl->mu);
    }
    refresh(cl, seen, deadline, &ignored);
    pthread_mutex_lock(&cl->mu);
    int changed = cl->owner[slot] != was;
    pthread_mutex_unlock(&cl->mu);
    return changed;
}

void rl_cluster_ask_if_stale(rl_cluster *cl, int64_t deadline) {
    pthread_mutex_lock(&cl->mu);
    int stale = cl->stale;
    pthread_mutex_unlock(&cl->mu);
    rl_error ignored;
    if (stale) refresh(cl, rl_now_ms(), deadline, &ignored);
}

void rl_cluster_poll(rl_cluster *cl, int64_t fresh_ms, int64_t deadline) {
    char host[sizeof cl->nodes->host];
    int port = 0;
    pthread_mutex_lock(&cl->mu);
    if (!cl->refreshing && cl->refreshed_at && rl_now_ms() - cl->refreshed_at >= fresh_ms &&
        !atomic_load(&cl->cfg->closing)) { /* (stopped: nothing called back) */
        unsigned known = 0;
        for (rl_cluster_node *n = cl->nodes; n; n = n->next)
            known++;
        /* In turn, not the first known: a master cut off from the others (clients still reach
         * it) goes on naming itself the owner of slots the others have given to its replica. */
        unsigned turn = known ? cl->polls++ % known : 0;
        for (rl_cluster_node *n = cl->nodes; n && !port; n = n->next)
            if (turn-- == 0) snprintf(host, sizeof host, "%s", n->host), port = n->port;
    }
    pthread_mutex_unlock(&cl->mu);
    if (!port) return;
    rl_error ignored; /* on a connection of its own: a refresh meanwhile need not wait for it */
    if (ask_node(cl, &cl->poll, host, port, deadline, &ignored) == RL_OK) {
        pthread_mutex_lock(&cl->mu);
        cl->refreshed_at = rl_now_ms();
        pthread_mutex_unlock(&cl->mu);
    }
}

static int by_address(const void *a, const void *b) {
    const rl_cluster_node *x = *(rl_cluster_node *const *)a, *y = *(rl_cluster_node *const *)b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->port > y->port) - (x->port < y->port);
}

rl_status rl_cluster_masters(rl_cluster *cl, rl_cluster_node ***out, size_t *n, rl_error *err) {
    *out = NULL, *n = 0;
    pthread_mutex_lock(&cl->mu);
    int64_t refreshed = cl->refreshed_at;
    pthread_mutex_unlock(&cl->mu);
    if (!refreshed) {
        rl_status st = refresh(cl, 0, INT64_MAX, err);
        if (st != RL_OK) return st;
    }
    pthread_mutex_lock(&cl->mu);
    size_t known = 0;
    for (rl_cluster_node *node = cl->nodes; node; node = node->next)
        known++;
    rl_cluster_node **masters = calloc(known ? known : 1, sizeof *masters);
    for (int s = 0; masters && s < RL_SLOTS; s++) {
        rl_cluster_node *owner = cl->owner[s];
        size_t i = 0;
        while (owner && i < *n && masters[i] != owner)
            i++;
        if (owner && i == *n && *n < known) masters[(*n)++] = owner;
    }
    pthread_mutex_unlock(&cl->mu);
    if (!masters) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    qsort(masters, *n, sizeof *masters, by_address);
    *out = masters;
    return RL_OK;
}

/* ---- following the cluster ----------------------------------------------------------------- */

static void sleep_ms(int64_t ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

rl_status rl_cluster_call(rl_cluster *cl, int slot, rl_cluster_run run, void *arg, rl_error *err) {
    rl_error unasked; /* the status of a failed map fetch is read from err */
    if (!err) err = &unasked;
    const rl_options *o = &cl->cfg->options;
    int64_t deadline = rl_now_ms() + o->command_timeout_ms, backoff = RETRY_MIN_MS;
    int64_t ends_by = call_deadline(cl); /* no map refresh goes past what one Redis gives */
    rl_cluster_node *ask_at = NULL;
    for (int redirects = 0;;) {
        rl_cluster_node *node = ask_at ? ask_at : rl_cluster_owner(cl, slot, err);
        if (!node) return err->status;
        rl_redirect r = {0};
        int repeatable = 0;
        rl_status st = run(&node->pool, ask_at != NULL, arg, &r, &repeatable, err);
        ask_at = NULL;
        if ((r.kind == RL_REDIRECT_MOVED || r.kind == RL_REDIRECT_ASK) && !r.host[0])
            memcpy(r.host, node->host, sizeof r.host); /* "MOVED 3999 :6381": this node's host */
        int wait = 0;
        if (r.kind == RL_REDIRECT_MOVED && ++redirects <= MOST_REDIRECTS) {
            rl_cluster_moved(cl, r.slot, r.host, r.port);
        } else if (r.kind == RL_REDIRECT_ASK && ++redirects <= MOST_REDIRECTS) {
            ask_at = rl_cluster_node_at(cl, r.host, r.port);
            if (!ask_at) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
        } else if (r.kind == RL_REDIRECT_TRYAGAIN || r.kind == RL_REDIRECT_CLUSTERDOWN) {
            wait = 1;
        } else if (st == RL_ERR_CONNECTION && repeatable && !atomic_load(&cl->cfg->closing)) {
            /* The node may be gone and its replica promoted: ask the map, and wait for the
             * failover while the call's time lasts. */
            rl_cluster_unreachable(cl, slot, node, ends_by);
            wait = 1;
        } else {
            if (r.kind == RL_REDIRECT_MOVED || r.kind == RL_REDIRECT_ASK)
                return rl_fail(err, RL_ERR_SERVER, "slot %d was redirected %d times: %s:%d", slot,
                               redirects - 1, r.host, r.port);
            return st;
        }
        if (wait) {
            int64_t left = deadline - rl_now_ms();
            if (left <= 0) {
                if (r.kind == RL_REDIRECT_TRYAGAIN || r.kind == RL_REDIRECT_CLUSTERDOWN)
                    return rl_fail(err, RL_ERR_SERVER,
                                   "the cluster answered %s for slot %d until the command "
                                   "timeout (%lld ms)",
                                   r.kind == RL_REDIRECT_TRYAGAIN ? "TRYAGAIN" : "CLUSTERDOWN",
                                   slot, (long long)o->command_timeout_ms);
                return st;
            }
            sleep_ms(backoff < left ? backoff : left);
            backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
        }
    }
}

/* ---- fork ---------------------------------------------------------------------------------- */

void rl_cluster_lock(rl_cluster *cl) {
    if (!cl) return;
    pthread_mutex_lock(&cl->mu);
    for (rl_cluster_node *n = cl->nodes; n; n = n->next) {
        pthread_mutex_lock(&n->pool.mu);
        pthread_mutex_lock(&n->sub.mu);
    }
}

void rl_cluster_unlock(rl_cluster *cl) {
    if (!cl) return;
    for (rl_cluster_node *n = cl->nodes; n; n = n->next) {
        pthread_mutex_unlock(&n->sub.mu);
        pthread_mutex_unlock(&n->pool.mu);
    }
    pthread_mutex_unlock(&cl->mu);
}

void rl_cluster_after_fork_child(rl_cluster *cl) {
    if (!cl) return;
    /* A parent's thread may have been refreshing, or waiting for a refresh: the child is
     * single-threaded here, and nothing of its own is. */
    cl->refreshing = 0;
    rl_cond_init(&cl->refresh_done);
    for (rl_cluster_node *n = cl->nodes; n; n = n->next) {
        rl_pool_after_fork_child(&n->pool);
        rl_sub_after_fork_child(&n->sub);
    }
}

void rl_cluster_forget_after_fork(rl_cluster *cl) {
    rl_conn_abandon(&cl->fetch); /* its refresh was forgotten at the fork */
    rl_conn_abandon(&cl->poll);
    for (rl_cluster_node *n = cl->nodes; n; n = n->next) {
        pthread_mutex_lock(&n->pool.mu);
        rl_pool_forget_after_fork(&n->pool);
        pthread_mutex_unlock(&n->pool.mu);
        pthread_mutex_lock(&n->sub.mu);
        rl_sub_forget_after_fork(&n->sub);
        pthread_mutex_unlock(&n->sub.mu);
        rl_conn_abandon(&n->renew);
    }
}
