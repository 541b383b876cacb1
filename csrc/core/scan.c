/* rl_scan_locks: lock-shaped keys found with SCAN (never KEYS), one bounded step at a time.
 * Each step is one SCAN ... TYPE hash (the server skips every other type) and one pipelined
 * HLEN + HRANDFIELD of what it returned: a hash is lock-shaped when it is small and its sampled
 * fields are owners ("<id>:<context>...") or a read/write lock's "mode". On a Redis Cluster the
 * walk covers every master in turn (the cursor names the master, see scan_cluster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "cluster.h"
#include "error.h"

#define MAX_COUNT 10000
#define MAX_FIELDS 1000 /* as rl_inspect: a bigger hash is not a lock */
#define SAMPLE "3"      /* fields sampled per hash */

void rl_scan_page_free(rl_scan_page *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++)
        free(p->names[i]);
    free(p->names);
    free(p->lens);
    free(p);
}

static int field_is_lockish(const redisReply *f) {
    if (f->type != REDIS_REPLY_STRING) return 0;
    if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) return 1;
    return memchr(f->str, ':', f->len) != NULL;
}

static int lock_shaped(const redisReply *hlen, const redisReply *sample) {
    if (hlen->type != REDIS_REPLY_INTEGER || hlen->integer < 1 || hlen->integer > MAX_FIELDS)
        return 0;
    if (sample->type != REDIS_REPLY_ARRAY || sample->elements == 0) return 0;
    for (size_t i = 0; i < sample->elements; i++)
        if (!field_is_lockish(sample->element[i])) return 0;
    return 1;
}

static rl_status keep(rl_scan_page *p, const redisReply *key, rl_error *err) {
    char *copy = malloc(key->len + 1);
    if (!copy) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    memcpy(copy, key->str, key->len);
    copy[key->len] = '\0';
    p->names[p->n] = copy;
    p->lens[p->n++] = key->len;
    return RL_OK;
}

/* Which of the hash keys SCAN returned are lock-shaped (one pipelined round trip). */
static rl_status sift(rl_client *c, const redisReply *keys, rl_scan_page *p, rl_error *err) {
    size_t n = keys->elements;
    p->looked_at = n;
    if (n == 0) return RL_OK;
    p->names = calloc(n, sizeof *p->names);
    p->lens = calloc(n, sizeof *p->lens);
    if (!p->names || !p->lens) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_batch b;
    rl_batch_init(&b);
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = keys->element[i];
        const char *hlen[2] = {"HLEN", k->str}, *sample[3] = {"HRANDFIELD", k->str, SAMPLE};
        size_t hlen_lens[2] = {4, k->len}, sample_lens[3] = {10, k->len, 1};
        rl_batch_add(&b, 2, hlen, hlen_lens);
        rl_batch_add(&b, 3, sample, sample_lens);
    }
    rl_status st = rl_batch_run(&b, c, err);
    for (size_t i = 0; st == RL_OK && i < n; i++)
        if (lock_shaped(rl_batch_reply(&b, 2 * i), rl_batch_reply(&b, 2 * i + 1)))
            st = keep(p, keys->element[i], err);
    rl_batch_free(&b);
    return st;
}

/* ---- on a Redis Cluster: every master in turn --------------------------------------------- */

/* A cluster's cursor: the master's index (in rl_cluster_masters' order) above NODE_CURSOR_BITS,
 * that master's SCAN cursor below (under 2^52 in all: exact in a Lua number too). */
#define NODE_CURSOR_BITS 42
#define NODE_CURSOR_MASK ((UINT64_C(1) << NODE_CURSOR_BITS) - 1)
#define MOST_MASTERS 1024

/* SCAN at the master the cursor names; *next_out: the cluster cursor that follows. */
static rl_status scan_cluster(rl_client *c, uint64_t cursor, rl_cmd *cmd, redisReply **reply,
                              uint64_t *next_out, rl_error *err) {
    rl_cluster_node **masters;
    size_t n;
    rl_status st = rl_cluster_masters(c->cfg.cluster, &masters, &n, err);
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

rl_status rl_scan_locks(rl_client *c, uint64_t cursor, const char *pattern, size_t count,
                        rl_scan_page **out, rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (count < 1 || count > MAX_COUNT)
        return rl_fail(err, RL_ERR_ARGUMENT, "count must be from 1 to %d", MAX_COUNT);
    rl_status st = rl_client_enter(c, err);
    if (st != RL_OK) return st;
    rl_scan_page *p = calloc(1, sizeof *p);
    char cursor_text[24], count_text[24];
    snprintf(cursor_text, sizeof cursor_text, "%llu", (unsigned long long)cursor);
    snprintf(count_text, sizeof count_text, "%zu", count);
    const char *argv[8] = {"SCAN", cursor_text, "COUNT", count_text,
                           "TYPE", "hash",      "MATCH", pattern};
    size_t lens[8] = {4, strlen(cursor_text),          5, strlen(count_text), 4, 4,
                      5, pattern ? strlen(pattern) : 0};
    redisReply *reply = NULL;
    rl_cmd cmd = {pattern ? 8 : 6, argv, lens};
    uint64_t next = 0;
    if (!p)
        st = rl_fail(err, RL_ERR_MEMORY, "out of memory");
    else if (c->cfg.cluster)
        st = scan_cluster(c, cursor, &cmd, &reply, &next, err);
    else
        st = rl_client_command(c, cmd.argc, argv, lens, &reply, err);
    if (st == RL_OK) {
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[1]->type != REDIS_REPLY_ARRAY) {
            st = reply->type == REDIS_REPLY_ERROR
                     ? rl_fail_reply(err, "SCAN", reply)
                     : rl_fail(err, RL_ERR_SERVER, "unexpected answer to SCAN");
        } else {
            p->next = c->cfg.cluster ? next : strtoull(reply->element[0]->str, NULL, 10);
            st = sift(c, reply->element[1], p, err);
        }
    }
    freeReplyObject(reply);
    rl_client_leave(c);
    if (st != RL_OK) {
        rl_scan_page_free(p);
        return st;
    }
    *out = p;
    return RL_OK;
}
