#include "renew_cluster.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "identity.h"
#include "redirect.h"
#include "renew_calls.h"

typedef struct placed {
    rl_cluster_node *node; /* NULL: no node serves its slot now */
    int slot;
    size_t index; /* in the caller's batch */
} placed;

static int by_node_then_slot(const void *a, const void *b) {
    const placed *x = a, *y = b;
    if (x->node != y->node) return (uintptr_t)x->node < (uintptr_t)y->node ? -1 : 1;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The calls [from, to) of one node, and how its exchange went. */
typedef struct node_round {
    rl_cluster_node *node;
    size_t from, to;
    int sent;        /* its calls are on the wire: read the answers */
    int slot;        /* one of its slots, to ask the map again when it fails */
    uint64_t before; /* node->renew.exchanges before the round */
    uint32_t server; /* the node's identity (identity.h), 0: not known */
} node_round;

static int is_error(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR;
}

/* Whether call k's keys may be split between two nodes: a slot in migration answers a call of
 * several keys ASK or TRYAGAIN (the source while it lacks some of them, the target while it has
 * not all), for as long as the migration lasts, though each key alone is served. */
static int split_slot(const rl_renew_calls *b, size_t k) {
    rl_redirect r;
    rl_redirect_kind kind = rl_redirect_parse(b->replies[k], &r);
    return b->count[k] > 1 && (kind == RL_REDIRECT_ASK || kind == RL_REDIRECT_TRYAGAIN);
}

/* Redoes call k through the pool, which follows MOVED/ASK and loads a missing script. Returns
 * the identity of the server that answered it (0: not known): a promoted replica answers a
 * client's first call NOSCRIPT, and its holds must still see that their server changed. */
static uint32_t redo(rl_client *c, rl_renew_calls *b, size_t k, rl_renew_outcome *out) {
    freeReplyObject(b->replies[k]);
    b->replies[k] = NULL;
    rl_error ignored;
    rl_cmd *cmd = &b->cmds[k];
    rl_status st = rl_client_script(c, RL_SCRIPT_RENEW, cmd->argc, cmd->argv, cmd->lens,
                                    &b->replies[k], 1, NULL, NULL, &ignored);
    out->round_trips++;
    return st == RL_OK ? rl_client_answered_by() : 0;
}

/* The answer of a call of one key (1, 0, 2), or -1 when there is none. */
static long long single_answer(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1) return -1;
    return r->element[0]->type == REDIS_REPLY_INTEGER ? r->element[0]->integer : -1;
}

/* Call k one key at a time through the pool (ASKING at the target for a key that moved): its
 * slot is split by a migration. answers[i] and servers[i] for its holds. */
static void redo_per_key(rl_client *c, const rl_renew_calls *b, size_t k, const placed *order,
                         long long *answers, uint32_t *servers, rl_renew_outcome *out) {
    const rl_cmd *cmd = &b->cmds[k];
    size_t n = b->count[k];
    for (size_t j = 0; j < n; j++) {
        const char *argv[RL_SCRIPT_ARGV_HEAD + 4];
        size_t lens[RL_SCRIPT_ARGV_HEAD + 4];
        size_t args = RL_SCRIPT_ARGV_HEAD + n; /* the call's ARGV: lease, then pairs */
        argv[2] = "1", lens[2] = 1;
        argv[3] = cmd->argv[RL_SCRIPT_ARGV_HEAD + j], lens[3] = cmd->lens[RL_SCRIPT_ARGV_HEAD + j];
        argv[4] = cmd->argv[args], lens[4] = cmd->lens[args];
        argv[5] = cmd->argv[args + 1 + 2 * j], lens[5] = cmd->lens[args + 1 + 2 * j];
        argv[6] = cmd->argv[args + 2 + 2 * j], lens[6] = cmd->lens[args + 2 + 2 * j];
        redisReply *reply = NULL;
        rl_error ignored;
        rl_status st =
            rl_client_script(c, RL_SCRIPT_RENEW, 7, argv, lens, &reply, 1, NULL, NULL, &ignored);
        out->round_trips++, out->calls++;
        answers[order[b->first[k] + j].index] = single_answer(reply);
        servers[order[b->first[k] + j].index] = st == RL_OK ? rl_client_answered_by() : 0;
        freeReplyObject(reply);
    }
}

rl_status rl_renew_on_cluster(rl_client *c, rl_cluster *cl, rl_hold **batch, size_t n,
                              int64_t lease, int64_t timeout_ms, long long *answers,
                              uint32_t *servers, rl_renew_outcome *out, rl_error *err) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        answers[i] = -1, servers[i] = 0;
    /* The round ends by its timeout, connections opened and the map asked included: the
     * watchdog decides (in doubt, lost) when it returns, and must not be kept past a lease's end
     * by nodes that cannot be reached. */
    int64_t deadline = rl_now_ms() + timeout_ms;
    rl_cluster_ask_if_stale(cl, deadline); /* a node was unreachable in the round before */
    placed *order = calloc(n ? n : 1, sizeof *order);
    rl_hold **sorted = calloc(n ? n : 1, sizeof *sorted);
    int *slots = calloc(n ? n : 1, sizeof *slots);
    node_round *rounds = calloc(n ? n : 1, sizeof *rounds);
    rl_cmd *probe = NULL;
    rl_renew_calls b = {0};
    rl_status st = RL_OK;
    if (!order || !sorted || !slots || !rounds) {
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory building a renewal round");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *key = rl_renew_key(batch[i], &len);
        order[i].slot = rl_key_slot(key, len);
        order[i].node = rl_cluster_owner(cl, order[i].slot, err);
        order[i].index = i;
        if (!order[i].node && st == RL_OK) st = err ? err->status : RL_ERR_CONNECTION;
    }
    qsort(order, n, sizeof *order, by_node_then_slot);
    for (size_t i = 0; i < n; i++)
        sorted[i] = batch[order[i].index], slots[i] = order[i].slot;
    if (rl_renew_calls_build(&b, &c->holds, sorted, n, slots, lease) != 0) {
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory building a renewal round");
        goto done;
    }
    out->calls = b.ncalls;
    /* The nodes' call ranges: calls are in node order. */
    size_t nodes = 0;
    for (size_t k = 0; k < b.ncalls; k++) {
        rl_cluster_node *node = order[b.first[k]].node;
        if (nodes == 0 || rounds[nodes - 1].node != node)
            rounds[nodes++] = (node_round){node, k, k, 0, order[b.first[k]].slot, 0, 0};
        rounds[nodes - 1].to = k + 1;
    }
    out->nodes = nodes;
    probe = malloc((b.ncalls + nodes) * sizeof *probe); /* each node's calls, after its probe */
    if (!probe) {
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory building a renewal round");
        goto done;
    }
    int known = atomic_load(&c->scripts.known[RL_SCRIPT_RENEW]);
    /* Every node's calls go out before any answer is read. */
    for (size_t r = 0; r < nodes; r++) {
        node_round *nr = &rounds[r];
        if (!nr->node) continue;
        nr->before = nr->node->renew.exchanges;
        int64_t left = deadline - rl_now_ms();
        nr->node->renew.connect_by = deadline;
        if (!known) { /* the first round: rl_scripts_run loads the script, node after node */
            rl_status one =
                rl_scripts_run(&c->scripts, &nr->node->renew, left > 0 ? left : 1, RL_SCRIPT_RENEW,
                               nr->to - nr->from, &b.cmds[nr->from], &b.replies[nr->from], 1, err);
            nr->node->renew.connect_by = 0;
            if (one != RL_OK && st == RL_OK) st = one;
            if (one != RL_OK)
                out->failed_nodes++, rl_cluster_unreachable(cl, nr->slot, nr->node, deadline);
            continue;
        }
        for (size_t k = nr->from; k < nr->to; k++) {
            b.cmds[k].argv[0] = "EVALSHA", b.cmds[k].lens[0] = 7;
            b.cmds[k].argv[1] = c->scripts.sha[RL_SCRIPT_RENEW], b.cmds[k].lens[1] = 40;
        }
        /* Which server answers, asked ahead of its calls in the same pipeline: node r's are
         * probe[from + r], then its calls. */
        rl_cmd *mine = &probe[nr->from + r];
        mine[0] = rl_identity_cmd;
        memcpy(&mine[1], &b.cmds[nr->from], (nr->to - nr->from) * sizeof *mine);
        rl_status one =
            rl_conn_send(&nr->node->renew, left > 0 ? left : 1, nr->to - nr->from + 1, mine, err);
        nr->node->renew.connect_by = 0;
        nr->sent = one == RL_OK;
        if (one != RL_OK && st == RL_OK) st = one;
    }
    for (size_t r = 0; r < nodes; r++) {
        node_round *nr = &rounds[r];
        if (nr->sent) {
            redisReply *identity = NULL;
            rl_status one = rl_conn_receive_replies(&nr->node->renew, 1, &identity, err);
            nr->server = rl_identity_of(identity);
            freeReplyObject(identity);
            if (one == RL_OK)
                one = rl_conn_receive_replies(&nr->node->renew, nr->to - nr->from,
                                              &b.replies[nr->from], err);
            if (one != RL_OK && st == RL_OK) st = one;
            nr->sent = one == RL_OK;
        }
        if (nr->node) out->round_trips += nr->node->renew.exchanges - nr->before;
        if (nr->node && known && !nr->sent) {
            out->failed_nodes++;
            rl_cluster_unreachable(cl, nr->slot, nr->node, deadline); /* a failover? */
        }
    }
    /* A moved slot (MOVED), a restarted node (NOSCRIPT): once more through the pool. A slot in
     * migration (ASK, TRYAGAIN): one key at a time, so that no hold is lost while its slot's
     * keys are split between two nodes (as long as that lasts). */
    for (size_t k = 0, r = 0; k < b.ncalls; k++) {
        while (r < nodes && rounds[r].to <= k)
            r++;
        /* The node's identity vouches only for the answers its own connection gave. */
        uint32_t server = r < nodes && rounds[r].sent ? rounds[r].server : 0;
        if (is_error(b.replies[k]) && !split_slot(&b, k)) server = redo(c, &b, k, out);
        for (size_t j = 0; j < b.count[k]; j++) {
            answers[order[b.first[k] + j].index] = rl_renew_calls_answer(&b, k, j);
            servers[order[b.first[k] + j].index] = server;
        }
        if (split_slot(&b, k)) redo_per_key(c, &b, k, order, answers, servers, out);
    }
done:
    rl_renew_calls_free(&b);
    free(order);
    free(sorted);
    free(slots);
    free(rounds);
    free(probe);
    return st;
}
