/* A waiter's next acquire sent by the subscriber thread when a release message wakes it
 * (rl_sub_send): the waiting thread wakes while the acquire is on the wire and only reads its
 * answer, saving the thread wake-up a hand-off would otherwise wait for before it sends. */
#ifndef RL_WOKEN_ACQUIRE_H
#define RL_WOKEN_ACQUIRE_H

#include "lock.h"

/* Readies the acquire the waiter would send next (rl_acquire_try with queue set): 1 when ready
 * (free it with rl_woken_free), 0 when it must go the waiter's own way (see rl_client_capture;
 * and fair locks: their script takes the time of the call, which a message may come long after). */
int rl_woken_prime(rl_lock *lock, const rl_attempt *a, rl_sub_send *s);
void rl_woken_free(rl_sub_send *s);

/* After the wait: 1 when the sent acquire answered (*st as rl_acquire_try's, with a->sent_at and
 * a->server of the call the thread sent), 0 when nothing was sent or the server refused it
 * without running it (an error reply: NOSCRIPT, READONLY, MOVED, ...): the waiter then tries its
 * own way, which mends or reports those as for any call. */
int rl_woken_read(rl_lock *lock, rl_attempt *a, rl_sub_send *s, int64_t *wait_hint_ms,
                  rl_status *st, rl_error *err);

#endif
