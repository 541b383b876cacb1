/* Missing on macOS: monotonic condition variables (platform.c's rl_plat_cond_init). */
#include <pthread.h>
#include <time.h>

int monotonic_waits(pthread_condattr_t *attr) {
    return pthread_condattr_setclock(attr, CLOCK_MONOTONIC);
}
