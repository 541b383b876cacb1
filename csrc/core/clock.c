#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>

static int64_t clock_us(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rl_now_ms(void) {
    return clock_us(CLOCK_MONOTONIC) / 1000;
}

int64_t rl_now_us(void) {
    return clock_us(CLOCK_MONOTONIC);
}

int64_t rl_thread_cpu_us(void) {
    return clock_us(CLOCK_THREAD_CPUTIME_ID);
}

int64_t rl_epoch_ms(void) {
    return clock_us(CLOCK_REALTIME) / 1000;
}

int rl_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

int rl_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms) {
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    return pthread_cond_timedwait(cond, mutex, &ts);
}

int rl_poll_until(int fd, short events, int64_t until_ms) {
    for (;;) {
        int64_t left = until_ms - rl_now_ms();
        if (left < 0) left = 0;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (rc > 0) return p.revents;
        if (rc == 0) return 0;
        if (errno != EINTR) return -1;
    }
}
