/* A list of plain commands sent pipelined in one round trip (rl_client_commands), with the
 * strings they point at: inspect.c and scan.c build their reads with it. */
#ifndef RL_BATCH_H
#define RL_BATCH_H

#include <stddef.h>

#include "client.h"

typedef struct rl_batch {
    size_t n, cap;
    rl_cmd *cmds;
    redisReply **replies; /* after rl_batch_run */
    char **owned;         /* strings freed with the batch */
    size_t n_owned, cap_owned;
    int failed; /* out of memory while building: rl_batch_run says so */
} rl_batch;

void rl_batch_init(rl_batch *b);
/* Adds a command of argc arguments (copied pointers: the bytes must outlive the run); returns
 * its index. */
size_t rl_batch_add(rl_batch *b, int argc, const char *const *argv, const size_t *lens);
/* Keeps s (malloc'd) until the batch is freed; returns s (NULL stays NULL and fails the batch). */
char *rl_batch_own(rl_batch *b, char *s);
rl_status rl_batch_run(rl_batch *b, rl_client *c, rl_error *err);
/* The reply of command i (after a successful run). */
const redisReply *rl_batch_reply(const rl_batch *b, size_t i);
void rl_batch_free(rl_batch *b);

#endif
