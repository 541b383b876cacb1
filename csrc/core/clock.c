#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>

#include "platform.h"

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
    return rl_plat_cond_init(cond);
}

int rl_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms) {
    return rl_plat_cond_wait_until(cond, mutex, until_ms);
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
