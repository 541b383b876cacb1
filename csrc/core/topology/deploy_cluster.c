/* The Cluster deployment (redis+cluster://): each key at the node serving its slot (cluster.c
 * keeps the map and the nodes). Calls follow MOVED and ASK, waiters subscribe (sharded) at their
 * channel's node, reads are pipelined per node, SCAN walks the masters, and a renewal round goes
 * to every node at once (renew_cluster.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client.h"
#include "clock.h"
#include "cluster.h"
#include "deploy.h"
#include "error.h"
#include "failover_grace.h"
#include "kind.h"
#include "names.h"
#include "renew_cluster.h"
#include "slots.h"

static rl_cluster *cluster_of(rl_client *c) {
    return c->deploy_state;
}

/* ---- life and fork ------------------------------------------------------------------------- */

/* Slots changed owner: no new hold on them for the failover grace, and the holds on them go in
 * doubt and are verified at once (watchdog.c). */
static void slots_moved(void *userdata, const uint64_t *slots) {
    rl_failover_grace_begin_slots(userdata, slots);
    rl_watchdog_slots_moved(userdata, slots);
}

static rl_status create(rl_client *c, rl_error *err) {
    rl_cluster *cl;
    rl_status st = rl_failover_grace_per_slot(c, err);
    if (st == RL_OK && (st = rl_cluster_new(&c->cfg, &cl, err)) != RL_OK)
        rl_failover_grace_free_slots(c);
    if (st == RL_OK) {
        rl_cluster_on_moved(cl, slots_moved, c);
        c->deploy_state = cl;
    }
    return st;
}

static void stop(rl_client *c) {
    rl_cluster_stop(cluster_of(c));
}

/* A holder hears of a failover at no call of its own: a node, in turn, asked for the map unless
 * a refresh got one since the last check was due (the watchdog calls this once a period, due by
 * `deadline`'s distance from now). */
static void check_topology(rl_client *c, int64_t deadline) {
    rl_cluster_poll(cluster_of(c), deadline - rl_now_ms(), deadline);
}

static void destroy(rl_client *c) {
    rl_cluster_free(cluster_of(c));
    rl_failover_grace_free_slots(c);
}

static void fork_lock(rl_client *c) {
    rl_cluster_lock(cluster_of(c));
}

static void fork_unlock(rl_client *c) {
    rl_cluster_unlock(cluster_of(c));
}

static void after_fork_child(rl_client *c) {
    rl_cluster_after_fork_child(cluster_of(c));
}

static void forget_after_fork(rl_client *c) {
    rl_cluster_forget_after_fork(cluster_of(c));
}

/* ---- calls ---------------------------------------------------------------------------------- */

static rl_status call(rl_client *c, const rl_cmd *cmd, int first_key, rl_deploy_run run, void *arg,
                      rl_error *err) {
    for (int i = first_key; i < cmd->argc; i++) /* sharded pub/sub on a cluster */
        if (cmd->argv[i] == rl_publish_command) cmd->argv[i] = "spublish", cmd->lens[i] = 8;
    int slot = cmd->argc > first_key ? rl_key_slot(cmd->argv[first_key], cmd->lens[first_key]) : 0;
    return rl_cluster_call(cluster_of(c), slot, run, arg, err);
}

/* The key a command is routed by: PUBSUB SHARDNUMSUB's channel, else the first argument. */
static int command_slot(const rl_cmd *cmd) {
    int at = cmd->lens[0] == 6 && strncasecmp(cmd->argv[0], "PUBSUB", 6) == 0 ? 2 : 1;
    return cmd->argc > at ? rl_key_slot(cmd->argv[at], cmd->lens[at]) : 0;
}

typedef struct one_read {
    rl_client *c;
    const rl_cmd *cmd;
    redisReply **reply;
} one_read;

/* rl_cluster_run for one read: a redirect is the cluster's to follow; any other answer, error
 * replies included (WRONGTYPE...), is the command's. */
static rl_status run_one(rl_pool *pool, int asking, void *arg, rl_redirect *redirect,
                         int *repeatable, rl_error *err) {
    one_read *r = arg;
    int64_t timeout_ms = r->c->cfg.options.command_timeout_ms;
    static const char *asking_argv[1] = {"ASKING"};
    static size_t asking_lens[1] = {6};
    static const rl_cmd asking_cmd = {1, asking_argv, asking_lens};
    *repeatable = 1;
    rl_conn *conn = rl_pool_take(pool);
    if (!conn) return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    rl_status st = RL_OK;
    if (asking && conn->fd < 0) st = rl_conn_open(conn, timeout_ms, err);
    if (st == RL_OK && asking) rl_conn_defer(conn, &asking_cmd);
    if (st == RL_OK) st = rl_conn_exchange(conn, timeout_ms, 1, r->cmd, r->reply, 1, err);
    rl_pool_give(pool, conn);
    if (st == RL_OK && rl_redirect_parse(*r->reply, redirect) != RL_REDIRECT_NONE) {
        st = rl_fail_reply(err, r->cmd->argv[0], *r->reply);
        freeReplyObject(*r->reply);
        *r->reply = NULL;
    }
    return st;
}

/* One pipelined exchange per node for the commands of the slots it serves; a command redirected
 * (a slot in migration) or left unanswered is then made alone, following the cluster. */
static rl_status commands(rl_client *c, size_t n_cmds, const rl_cmd *all, redisReply **out,
                          rl_error *err) {
    rl_cluster *cl = cluster_of(c);
    rl_cluster_node **node = calloc(n_cmds, sizeof *node);
    rl_cmd *cmds = calloc(n_cmds, sizeof *cmds);
    redisReply **replies = calloc(n_cmds, sizeof *replies);
    size_t *index = calloc(n_cmds, sizeof *index);
    rl_status st = RL_OK;
    if (!node || !cmds || !replies || !index) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    for (size_t i = 0; st == RL_OK && i < n_cmds; i++)
        if (!(node[i] = rl_cluster_owner(cl, command_slot(&all[i]), err)))
            st = err ? err->status : RL_ERR_CONNECTION;
    for (size_t i = 0; st == RL_OK && i < n_cmds; i++) {
        if (!node[i]) continue; /* its node's exchange is done */
        rl_cluster_node *at = node[i];
        size_t m = 0;
        for (size_t j = i; j < n_cmds; j++)
            if (node[j] == at) index[m] = j, cmds[m++] = all[j], node[j] = NULL;
        rl_conn *conn = rl_pool_take(&at->pool);
        if (!conn) {
            st = rl_fail(err, RL_ERR_CLOSED, "the client is closed");
            break;
        }
        rl_error ignored; /* unanswered: made alone below */
        if (rl_conn_exchange(conn, c->cfg.options.command_timeout_ms, m, cmds, replies, 1,
                             &ignored) == RL_OK)
            for (size_t k = 0; k < m; k++)
                out[index[k]] = replies[k];
        rl_pool_give(&at->pool, conn);
    }
    for (size_t i = 0; st == RL_OK && i < n_cmds; i++) {
        rl_redirect r;
        if (out[i] && rl_redirect_parse(out[i], &r) == RL_REDIRECT_NONE) continue;
        freeReplyObject(out[i]);
        out[i] = NULL;
        one_read read = {c, &all[i], &out[i]};
        st = rl_cluster_call(cl, command_slot(&all[i]), run_one, &read, err);
    }
    free(node);
    free(cmds);
    free(replies);
    free(index);
    return st;
}

/* A cluster's cursor: the master's index (in rl_cluster_masters' order) above NODE_CURSOR_BITS,
 * that master's SCAN cursor below (under 2^52 in all: exact in a Lua number too). */
#define NODE_CURSOR_BITS 42
#define NODE_CURSOR_MASK ((UINT64_C(1) << NODE_CURSOR_BITS) - 1)
#define MOST_MASTERS 1024

/* SCAN at the master the cursor names; *next_out: the cluster cursor that follows. */
static rl_status scan(rl_client *c, uint64_t cursor, rl_cmd *cmd, redisReply **reply,
                      uint64_t *next_out, rl_error *err) {
    rl_cluster_node **masters;
    size_t n;
    rl_status st = rl_cluster_masters(cluster_of(c), &masters, &n, err);
    if (st != RL_OK) return st;
    uint64_t index = cursor >> NODE_CURSOR_BITS;
    char node_cursor[24];
    snprintf(node_cursor, sizeof node_cursor, "%llu",
             (unsigned long long)(cursor & NODE_CURSOR_MASK));
    if (n > MOST_MASTERS)
        st = rl_fail(err, RL_ERR_ARGUMENT, "a cluster of more than %d masters", MOST_MASTERS);
    else if (index >= n)
        st = rl_fail(err, RL_ERR_ARGUMENT,
                     "scan cursor %llu names master %llu of a cluster of %zu masters",
                     (unsigned long long)cursor, (unsigned long long)index, n);
    rl_conn *conn = st == RL_OK ? rl_pool_take(&masters[index]->pool) : NULL;
    if (st == RL_OK && !conn) st = rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    if (conn) {
        cmd->argv[1] = node_cursor, cmd->lens[1] = strlen(node_cursor);
        st = rl_conn_exchange(conn, c->cfg.options.command_timeout_ms, 1, cmd, reply, 1, err);
        rl_pool_give(&masters[index]->pool, conn);
    }
    if (st == RL_OK && (*reply)->type == REDIS_REPLY_ARRAY && (*reply)->elements == 2 &&
        (*reply)->element[0]->type == REDIS_REPLY_STRING) {
        uint64_t next = strtoull((*reply)->element[0]->str, NULL, 10);
        if (next > NODE_CURSOR_MASK)
            st = rl_fail(err, RL_ERR_SERVER, "SCAN at %s:%d answered a cursor over 2^%d",
                         masters[index]->host, masters[index]->port, NODE_CURSOR_BITS);
        else if (next != 0)
            *next_out = index << NODE_CURSOR_BITS | next;
        else
            *next_out = index + 1 < n ? (index + 1) << NODE_CURSOR_BITS : 0;
    }
    free(masters);
    return st;
}

static rl_status check_name(const void *name, size_t len, const char *what, rl_error *err) {
    return rl_name_check_cluster(name, len, what, err);
}

/* ---- pub/sub -------------------------------------------------------------------------------- */

static rl_subscriber *subscriber(rl_client *c, const char *channel, size_t len, rl_error *err) {
    rl_cluster_node *node = rl_cluster_owner(cluster_of(c), rl_key_slot(channel, len), err);
    return node ? &node->sub : NULL;
}

static void channel_moved(rl_client *c, const char *channel, size_t len) {
    const rl_options *o = &c->cfg.options; /* the map, within what a call gets */
    rl_cluster_unreachable(cluster_of(c), rl_key_slot(channel, len), NULL,
                           rl_now_ms() + o->connect_timeout_ms + o->command_timeout_ms);
}

static size_t subscriptions(rl_client *c) {
    size_t n = 0;
    for (rl_cluster_node *node = rl_cluster_nodes(cluster_of(c)); node; node = node->next)
        n += rl_sub_count(&node->sub);
    return n;
}

/* ---- background work ------------------------------------------------------------------------ */

static int64_t send_deferred(rl_client *c, int64_t idle_ms, int64_t timeout_ms) {
    int64_t next = 0;
    for (rl_cluster_node *n = rl_cluster_nodes(cluster_of(c)); n; n = n->next) {
        int64_t due = rl_pool_send_deferred(&n->pool, idle_ms, timeout_ms);
        if (due && (!next || due < next)) next = due;
    }
    return next;
}

static rl_status renew(rl_client *c, rl_hold **batch, size_t n, int64_t lease, int64_t timeout_ms,
                       long long *answers, uint32_t *servers, rl_renew_outcome *out,
                       rl_error *err) {
    return rl_renew_on_cluster(c, cluster_of(c), batch, n, lease, timeout_ms, answers, servers, out,
                               err);
}

static void stats(rl_client *c, rl_stats *out) {
    out->cluster_refreshes = rl_cluster_refreshes(cluster_of(c));
}

const rl_deploy rl_deploy_cluster = {
    .name = "cluster",
    .numsub = "SHARDNUMSUB",
    .create = create,
    .stop = stop,
    .destroy = destroy,
    .fork_lock = fork_lock,
    .fork_unlock = fork_unlock,
    .after_fork_child = after_fork_child,
    .forget_after_fork = forget_after_fork,
    .call = call,
    .commands = commands,
    .scan = scan,
    .check_name = check_name,
    .subscriber = subscriber,
    .channel_moved = channel_moved,
    .subscriptions = subscriptions,
    .send_deferred = send_deferred,
    .renew = renew,
    .check_topology = check_topology,
    .stats = stats,
};
