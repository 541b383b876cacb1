/* The script calls of one renewal round: many (key, owner) pairs per call of the renewal script,
 * a new call every RL_RENEW_PAIRS_PER_CALL pairs, and on a cluster at every change of slot (a
 * script's keys must share one). The argv points into the holds, which the round pins, and into
 * the owner fields made for the round. */
#ifndef RL_RENEW_CALLS_H
#define RL_RENEW_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "holds.h"

/* Pairs per script call: big enough that 100,000 holds take 100 calls in one round trip, small
 * enough that one call keeps Redis busy for only a fraction of a millisecond. */
#define RL_RENEW_PAIRS_PER_CALL 1000

typedef struct rl_renew_calls {
    size_t ncalls;
    rl_cmd *cmds;
    redisReply **replies;
    size_t *first, *count; /* each call's holds: batch[first .. first + count) */
    const char **argv;
    size_t *lens;
    char (*numkeys)[16];
    char *owners; /* the holds' owner fields (rl_hold_owner), one per run of a context's holds */
    char lease[24];
} rl_renew_calls;

/* The key a hold is renewed by: its lock's name, or a permit's timeout ZSET. */
const char *rl_renew_key(const rl_hold *h, size_t *len);

/* Builds EVALSHA-ready calls (the first RL_SCRIPT_ARGV_HEAD slots left to rl_scripts_run) for
 * batch[0..n); slots: each hold's slot (a new call where it changes), or NULL. 0, or -1 when out
 * of memory (free it all the same). */
int rl_renew_calls_build(rl_renew_calls *b, const rl_holds *holds, rl_hold **batch, size_t n,
                         const int *slots, int64_t lease);
/* The answer of hold i of call k's reply (1, 0, 2), or -1 when there is none. */
long long rl_renew_calls_answer(const rl_renew_calls *b, size_t k, size_t j);
void rl_renew_calls_free(rl_renew_calls *b);

#endif
