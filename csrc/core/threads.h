/* Starting the core's background threads with every signal blocked, so that signals (Ctrl-C,
 * SIGPIPE, SIGCHLD) always go to the host's own threads. */
#ifndef RL_THREADS_H
#define RL_THREADS_H

#include <pthread.h>

int rl_thread_start(pthread_t *thread, void *(*main)(void *), void *arg); /* 0 on success */

#endif
