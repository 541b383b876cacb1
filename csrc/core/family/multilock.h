/* A multi-lock's acquire, as steps (multilock.c): one round of RedissonMultiLock.tryLock, run
 * in a loop by the blocking acquire and between member calls by the async one
 * (multilock_async.c), so that both follow the same rules. */
#ifndef RL_MULTILOCK_H
#define RL_MULTILOCK_H

#include "lock.h"

struct rl_multilock {
    size_t n;
    int redlock;
    rl_lock **locks; /* not owned */
};

typedef struct rl_round {
    rl_multilock *m;
    uint64_t context;
    int64_t wait, lease;
    rl_acquire_options o; /* the caller's */
    size_t tolerated, i, ntaken, left_to_fail;
    int64_t taken_lease, start, time, remain, lock_wait, held_before;
    char *taken;
    int failed_on_errors, over;
    int64_t pause_ms; /* set by rl_round_answer: pause this long before going on */
    rl_status hard;   /* rl_round_answer's -1: the failure to answer */
    rl_error failure;
} rl_round;

/* The options' bounds (both acquires check them first). */
rl_status rl_multilock_check(const rl_multilock *m, const rl_acquire_options *o, rl_error *err);
/* One round of a wait without end: its bounded wait (Redisson's, random with a fixed lease). */
int64_t rl_round_forever_wait(const rl_multilock *m, int64_t lease);

rl_status rl_round_begin(rl_round *r, rl_multilock *m, uint64_t context, int64_t wait,
                         int64_t lease, const rl_acquire_options *o, rl_error *err);
/* 1: acquire m->locks[r->i] with *member next; 0: the round is over (rl_round_end). */
int rl_round_next(rl_round *r, rl_acquire_options *member);
/* That acquire's outcome: 1 go on (after r->pause_ms, then rl_round_tick), 0 the round is over,
 * -1 it failed (r->hard, *err; what it took is released: rl_round_free). */
int rl_round_answer(rl_round *r, rl_status st, const rl_error *e, rl_error *err);
/* Counts the time spent: 0 when the wait ran out (the round is over). */
int rl_round_tick(rl_round *r);
/* The round's outcome (leases set, RedLock's validity checked); frees the round. */
rl_status rl_round_end(rl_round *r, rl_error *err);
/* Releases what the round took and frees it (a cancelled async acquire). */
void rl_round_give_back(rl_round *r);
void rl_round_free(rl_round *r);

#endif
