/* Async calls beyond the lock's (lock_async.c runs them; family_async.c makes them): a call whose
 * every step is `steps(call, arg)`, run serialized on the client's workers: the first at once,
 * the next when woken (rl_call_wake, a subscriber ticket's notify), by its timer, or by a cancel.
 * The call keeps its client entered until it is freed. */
#ifndef RL_CALL_H
#define RL_CALL_H

#include "client.h"

/* `arg` is the call's from here: free_arg(arg) when the call is freed, or at once when it cannot
 * start. */
rl_status rl_call_start(rl_client *c, void (*steps)(rl_call *call, void *arg), void *arg,
                        void (*free_arg)(void *arg), rl_done_fn done, void *userdata, rl_call **out,
                        rl_error *err);
int rl_call_cancelled(const rl_call *call);
/* The call's end: `done` runs (once; later steps see a finished call and do nothing). */
void rl_call_finish(rl_call *call, rl_status st, int64_t value, const rl_error *err);
void rl_call_wake(void *call);
/* Arms (moves) the call's timer to at_ms (monotonic); at_ms < 0 disarms it. -1 out of memory. */
int rl_call_timer(rl_call *call, int64_t at_ms);
rl_client *rl_call_client(const rl_call *call);
/* A reference on the call (the call and its arg stay alive) for what may still wake it, such as
 * another call it waits for; given back with rl_call_unkeep. */
void rl_call_keep(rl_call *call);
void rl_call_unkeep(rl_call *call);

#endif
