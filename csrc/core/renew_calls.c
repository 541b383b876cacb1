#include "renew_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scripts.h"
#include "watchdog.h"

const char *rl_renew_key(const rl_hold *h, size_t *len) {
    int permit = h->kind == RL_HOLD_PERMIT; /* its key is its semaphore's timeout ZSET */
    *len = permit ? h->read_keys_len : h->name_len;
    return permit ? rl_hold_read_keys(h) : h->name;
}

void rl_renew_calls_free(rl_renew_calls *b) {
    if (b->replies)
        for (size_t i = 0; i < b->ncalls; i++)
            freeReplyObject(b->replies[i]);
    free(b->cmds);
    free(b->replies);
    free(b->first);
    free(b->count);
    free(b->argv);
    free(b->lens);
    free(b->numkeys);
    free(b->owners);
}

/* Whether b's owner field is a's (the holds store none: rl_hold_owner makes them, once per run
 * of holds of one context, so that a round over one thread's holds writes one). */
static int same_owner(const rl_hold *a, const rl_hold *b) {
    return a->context == b->context && a->kind == b->kind && rl_hold_is_lock(a);
}

/* The room the owner fields of batch[0..n) take in b->owners. */
static size_t owners_size(const rl_holds *holds, rl_hold **batch, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || !same_owner(batch[i - 1], batch[i]))
            total += rl_hold_owner_len(holds, batch[i]) + 1;
    return total;
}

/* Where calls start: every RL_RENEW_PAIRS_PER_CALL holds and at every change of slot. */
static size_t split(rl_renew_calls *b, size_t n, const int *slots) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int fresh = i == 0 || b->count[k - 1] == RL_RENEW_PAIRS_PER_CALL ||
                    (slots && slots[i] != slots[i - 1]);
        if (fresh) b->first[k] = i, b->count[k++] = 0;
        b->count[k - 1]++;
    }
    return k;
}

int rl_renew_calls_build(rl_renew_calls *b, const rl_holds *holds, rl_hold **batch, size_t n,
                         const int *slots, int64_t lease) {
    memset(b, 0, sizeof *b);
    size_t most = n ? n : 1; /* calls: at most one per hold */
    b->first = calloc(most, sizeof *b->first);
    b->count = calloc(most, sizeof *b->count);
    if (!b->first || !b->count) return -1;
    b->ncalls = split(b, n, slots);
    size_t slots_needed = 3 * n + b->ncalls * (RL_SCRIPT_ARGV_HEAD + 1);
    b->cmds = calloc(b->ncalls + 1, sizeof *b->cmds);
    b->replies = calloc(b->ncalls + 1, sizeof *b->replies);
    b->argv = calloc(slots_needed + 1, sizeof *b->argv);
    b->lens = calloc(slots_needed + 1, sizeof *b->lens);
    b->numkeys = calloc(b->ncalls + 1, sizeof *b->numkeys);
    b->owners = malloc(owners_size(holds, batch, n) + 1);
    if (!b->cmds || !b->replies || !b->argv || !b->lens || !b->numkeys || !b->owners) return -1;
    char *owner_at = b->owners;
    const char *owner = NULL;
    size_t owner_len = 0;
    int lease_len = snprintf(b->lease, sizeof b->lease, "%lld", (long long)lease);
    size_t at = 0;
    for (size_t k = 0; k < b->ncalls; k++) {
        size_t first = b->first[k], count = b->count[k];
        const char **a = b->argv + at;
        size_t *l = b->lens + at;
        int nk = snprintf(b->numkeys[k], sizeof b->numkeys[k], "%zu", count);
        a[2] = b->numkeys[k], l[2] = (size_t)nk;
        const char **args = a + RL_SCRIPT_ARGV_HEAD + count;
        size_t *arg_lens = l + RL_SCRIPT_ARGV_HEAD + count;
        args[0] = b->lease, arg_lens[0] = (size_t)lease_len;
        for (size_t i = 0; i < count; i++) {
            rl_hold *h = batch[first + i];
            int permit = h->kind == RL_HOLD_PERMIT;
            a[RL_SCRIPT_ARGV_HEAD + i] = rl_renew_key(h, &l[RL_SCRIPT_ARGV_HEAD + i]);
            if (first + i == 0 || !same_owner(batch[first + i - 1], h)) {
                owner = owner_at;
                owner_len = rl_hold_owner(holds, h, owner_at);
                owner_at += owner_len + 1;
            }
            args[1 + 2 * i] = owner, arg_lens[1 + 2 * i] = owner_len;
            args[2 + 2 * i] = permit ? RL_RENEW_PERMIT : rl_hold_read_keys(h);
            arg_lens[2 + 2 * i] = permit ? strlen(RL_RENEW_PERMIT) : h->read_keys_len;
        }
        b->cmds[k] = (rl_cmd){(int)(RL_SCRIPT_ARGV_HEAD + 3 * count + 1), a, l};
        at += RL_SCRIPT_ARGV_HEAD + 3 * count + 1;
    }
    return 0;
}

long long rl_renew_calls_answer(const rl_renew_calls *b, size_t k, size_t j) {
    const redisReply *r = b->replies[k];
    if (!r || r->type != REDIS_REPLY_ARRAY || j >= r->elements) return -1;
    return r->element[j]->type == REDIS_REPLY_INTEGER ? r->element[j]->integer : -1;
}
