/* rl_scan_locks: lock-shaped keys found with SCAN (never KEYS), one bounded step at a time.
 * Each step is one SCAN ... TYPE hash (the server skips every other type) and one pipelined
 * HLEN + HRANDFIELD of what it returned: a hash is lock-shaped when it is small and its sampled
 * fields are owners ("<id>:<context>...") or a read/write lock's "mode". On a Redis Cluster the
 * walk covers every master in turn (the cursor names the master: deploy_cluster.c's scan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
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
    else
        st = c->deploy->scan(c, cursor, &cmd, &reply, &next, err);
    if (st == RL_OK) {
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[1]->type != REDIS_REPLY_ARRAY) {
            st = reply->type == REDIS_REPLY_ERROR
                     ? rl_fail_reply(err, "SCAN", reply)
                     : rl_fail(err, RL_ERR_SERVER, "unexpected answer to SCAN");
        } else {
            p->next = next;
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
