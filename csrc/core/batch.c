#include "batch.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster.h"
#include "error.h"
#include "redirect.h"
#include "slots.h"

void rl_batch_init(rl_batch *b) {
    memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

size_t rl_batch_add(rl_batch *b, int argc, const char *const *argv, const size_t *lens) {
    if (b->failed || grow((void **)&b->cmds, &b->cap, b->n + 1, sizeof *b->cmds) != 0) {
        b->failed = 1;
        return 0;
    }
    const char **a = malloc((size_t)argc * sizeof *a);
    size_t *l = malloc((size_t)argc * sizeof *l);
    if (!a || !l) {
        free(a);
        free(l);
        b->failed = 1;
        return 0;
    }
    memcpy(a, argv, (size_t)argc * sizeof *a);
    memcpy(l, lens, (size_t)argc * sizeof *l);
    b->cmds[b->n] = (rl_cmd){argc, a, l};
    return b->n++;
}

char *rl_batch_own(rl_batch *b, char *s) {
    if (!s || grow((void **)&b->owned, &b->cap_owned, b->n_owned + 1, sizeof *b->owned) != 0) {
        free(s);
        b->failed = 1;
        return NULL;
    }
    b->owned[b->n_owned++] = s;
    return s;
}

/* ---- on a Redis Cluster: each command at the node serving its key's slot ---------------- */

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
static rl_status run_on_cluster(rl_batch *b, rl_client *c, rl_error *err) {
    rl_cluster *cl = c->cfg.cluster;
    rl_cluster_node **node = calloc(b->n, sizeof *node);
    rl_cmd *cmds = calloc(b->n, sizeof *cmds);
    redisReply **replies = calloc(b->n, sizeof *replies);
    size_t *index = calloc(b->n, sizeof *index);
    rl_status st = RL_OK;
    if (!node || !cmds || !replies || !index) st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    for (size_t i = 0; st == RL_OK && i < b->n; i++)
        if (!(node[i] = rl_cluster_owner(cl, command_slot(&b->cmds[i]), err)))
            st = err ? err->status : RL_ERR_CONNECTION;
    for (size_t i = 0; st == RL_OK && i < b->n; i++) {
        if (!node[i]) continue; /* its node's exchange is done */
        rl_cluster_node *at = node[i];
        size_t m = 0;
        for (size_t j = i; j < b->n; j++)
            if (node[j] == at) index[m] = j, cmds[m++] = b->cmds[j], node[j] = NULL;
        rl_conn *conn = rl_pool_take(&at->pool);
        if (!conn) {
            st = rl_fail(err, RL_ERR_CLOSED, "the client is closed");
            break;
        }
        rl_error ignored; /* unanswered: made alone below */
        if (rl_conn_exchange(conn, c->cfg.options.command_timeout_ms, m, cmds, replies, 1,
                             &ignored) == RL_OK)
            for (size_t k = 0; k < m; k++)
                b->replies[index[k]] = replies[k];
        rl_pool_give(&at->pool, conn);
    }
    for (size_t i = 0; st == RL_OK && i < b->n; i++) {
        rl_redirect r;
        if (b->replies[i] && rl_redirect_parse(b->replies[i], &r) == RL_REDIRECT_NONE) continue;
        freeReplyObject(b->replies[i]);
        b->replies[i] = NULL;
        one_read read = {c, &b->cmds[i], &b->replies[i]};
        st = rl_cluster_call(cl, command_slot(&b->cmds[i]), run_one, &read, err);
    }
    free(node);
    free(cmds);
    free(replies);
    free(index);
    return st;
}

rl_status rl_batch_run(rl_batch *b, rl_client *c, rl_error *err) {
    if (b->failed) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    if (b->n == 0) return RL_OK;
    b->replies = calloc(b->n, sizeof *b->replies);
    if (!b->replies) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = c->cfg.cluster ? run_on_cluster(b, c, err)
                                  : rl_client_commands(c, b->n, b->cmds, b->replies, err);
    if (st != RL_OK) {
        for (size_t i = 0; i < b->n; i++)
            freeReplyObject(b->replies[i]);
        free(b->replies);
        b->replies = NULL;
    }
    return st;
}

const redisReply *rl_batch_reply(const rl_batch *b, size_t i) {
    return b->replies[i];
}

void rl_batch_free(rl_batch *b) {
    for (size_t i = 0; i < b->n; i++) {
        free((void *)b->cmds[i].argv);
        free(b->cmds[i].lens);
        if (b->replies && b->replies[i]) freeReplyObject(b->replies[i]);
    }
    for (size_t i = 0; i < b->n_owned; i++)
        free(b->owned[i]);
    free(b->cmds);
    free(b->replies);
    free(b->owned);
    rl_batch_init(b);
}
