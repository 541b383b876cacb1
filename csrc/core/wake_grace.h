/* Recent hand-overs: locks this client released while Redis reported that the release's message
 * reached a waiter. An acquire of such a lock by this client soon after gives the woken waiter
 * the time of a hand-off first, so that a worker that releases and re-acquires at once does not
 * keep taking the lock back from the waiter it just woke (fairness of the non-fair lock). */
#ifndef RL_WAKE_GRACE_H
#define RL_WAKE_GRACE_H

#include <stddef.h>
#include <stdint.h>

#include "redlease.h"

/* How long a woken waiter is given by default (rl_options.handover_grace_ms): the message's
 * delivery, its thread waking and one acquire round trip take well under a millisecond on a LAN;
 * the wait ends earlier on the waiter's own release message, so a longer grace costs nothing
 * while locks change hands. */
#define RL_HANDOVER_GRACE_MS 2
#define RL_HANDOVERS 8 /* the most recent ones; an older one is long past its grace */

typedef struct rl_handovers {
    struct {
        uint64_t hash;
        int64_t until_ms;        /* 0: an empty slot */
        uint64_t messages_floor; /* rl_sub_observe's floor: messages on the channel not the
                                  * woken waiter's (this release's own included); 0: none */
    } recent[RL_HANDOVERS];
    unsigned next;
} rl_handovers;

/* Both under the client's mutex. */
void rl_handovers_note(rl_handovers *h, const void *name, size_t len, rl_lock_kind kind,
                       int64_t until_ms, uint64_t messages_floor);
/* Until when an acquire of that lock should leave it to the woken waiter (and the floor noted
 * with it in *messages_floor); -1 when it need not. */
int64_t rl_handovers_until(const rl_handovers *h, const void *name, size_t len, rl_lock_kind kind,
                           int64_t now_ms, uint64_t *messages_floor);

#endif
