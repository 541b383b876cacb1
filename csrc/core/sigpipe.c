#include "sigpipe.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static void only_sigpipe(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGPIPE);
}

void rl_sigpipe_block(rl_sigpipe_guard *g) {
    sigset_t pipe_set, pending;
    only_sigpipe(&pipe_set);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old_mask);
}

void rl_sigpipe_restore(rl_sigpipe_guard *g) {
    if (!g->was_pending) {
        sigset_t pipe_set, pending;
        only_sigpipe(&pipe_set);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            const struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}
