#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

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

rl_status rl_batch_run(rl_batch *b, rl_client *c, rl_error *err) {
    if (b->failed) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    if (b->n == 0) return RL_OK;
    b->replies = calloc(b->n, sizeof *b->replies);
    if (!b->replies) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    rl_status st = rl_client_commands(c, b->n, b->cmds, b->replies, err);
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
