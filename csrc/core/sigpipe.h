/* Keeps a write to a closed socket from killing the host process with SIGPIPE.
 *
 * hiredis writes with write()/send() without MSG_NOSIGNAL, and a host such as lua5.4 keeps
 * SIGPIPE's default action (terminate). Around each exchange we block SIGPIPE in the calling
 * thread; a SIGPIPE raised meanwhile stays pending and is consumed before the mask is restored,
 * unless one was already pending before (then it belongs to someone else). */
#ifndef RL_SIGPIPE_H
#define RL_SIGPIPE_H

#include <signal.h>

typedef struct rl_sigpipe_guard {
    sigset_t old_mask;
    int was_pending;
} rl_sigpipe_guard;

void rl_sigpipe_block(rl_sigpipe_guard *guard);
void rl_sigpipe_restore(rl_sigpipe_guard *guard);

#endif
