/* Monotonic (and wall-clock) time in milliseconds, and deadlines for condition-variable and
 * socket waits. */
#ifndef RL_CLOCK_H
#define RL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

int64_t rl_now_ms(void);
int64_t rl_now_us(void);
int64_t rl_thread_cpu_us(void); /* CPU time of the calling thread */

/* Wall-clock time in ms since the epoch: only for the fair lock's queue deadlines, which every
 * client of a lock (Redisson too) compares with its own clock. */
int64_t rl_epoch_ms(void);

/* Initialises a condition variable that waits on CLOCK_MONOTONIC (immune to wall-clock jumps). */
int rl_cond_init(pthread_cond_t *cond);

/* Waits on cond until signalled or until the monotonic time `until_ms`. */
int rl_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms);

/* poll() of one descriptor for `events` until the monotonic time `until_ms` (a signal does not
 * restart the time): the revents (> 0), 0 when the deadline passed first, -1 with errno. */
int rl_poll_until(int fd, short events, int64_t until_ms);

#endif
