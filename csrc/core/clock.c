#include "clock.h"

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
