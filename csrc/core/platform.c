#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __APPLE__
#include <sys/random.h> /* getentropy */

#include "clock.h"
#else
#include <sys/random.h> /* getrandom */
#endif

#ifdef __APPLE__
/* macOS has neither SOCK_CLOEXEC/SOCK_NONBLOCK nor pipe2 (before macOS 27): the flags are set
 * right after (a host thread's fork+exec in between could inherit the descriptor, as on any
 * system without those flags). */
static int set_flags(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int rl_plat_socket(int family) {
    int fd = socket(family, SOCK_STREAM, 0), on = 1;
    if (fd < 0) return -1;
    /* macOS's own way to keep SIGPIPE away (older SDKs have no MSG_NOSIGNAL): on the socket */
    if (set_flags(fd) != 0 || setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int rl_plat_pipe(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    if (set_flags(fds[0]) == 0 && set_flags(fds[1]) == 0) return 0;
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    errno = e;
    return -1;
}

void rl_plat_keepalive(int fd, int idle_s, int interval_s, int probes) {
    /* macOS calls the idle time TCP_KEEPALIVE */
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPALIVE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

size_t rl_plat_random(unsigned char *buf, size_t n) {
    /* no getrandom: getentropy, at most 256 bytes a call */
    size_t got = 0;
    while (got < n) {
        size_t step = n - got > 256 ? 256 : n - got;
        if (getentropy(buf + got, step) != 0) break;
        got += step;
    }
    return got;
}

const char *rl_plat_strerror(int error, char *buf, size_t len) {
    if (strerror_r(error, buf, len) != 0) snprintf(buf, len, "error %d", error); /* POSIX form */
    return buf;
}

int rl_plat_cond_init(pthread_cond_t *cond) {
    return pthread_cond_init(cond, NULL); /* no pthread_condattr_setclock: see the wait */
}

int rl_plat_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms) {
    /* waits a relative time, measured from the monotonic now, so a wall-clock jump cannot
     * stretch or cut it */
    int64_t left = until_ms - rl_now_ms();
    if (left < 0) left = 0;
    struct timespec rel = {.tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000};
    return pthread_cond_timedwait_relative_np(cond, mutex, &rel);
}

#else /* Linux */

int rl_plat_socket(int family) {
    return socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

int rl_plat_pipe(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

void rl_plat_keepalive(int fd, int idle_s, int interval_s, int probes) {
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

size_t rl_plat_random(unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno != EINTR)
            break;
    }
    return got;
}

const char *rl_plat_strerror(int error, char *buf, size_t len) {
#ifdef __GLIBC__
    return strerror_r(error, buf, len); /* the GNU form (_GNU_SOURCE) */
#else /* musl keeps the POSIX form whatever _GNU_SOURCE says */
    if (strerror_r(error, buf, len) != 0) snprintf(buf, len, "error %d", error);
    return buf;
#endif
}

int rl_plat_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

int rl_plat_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms) {
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    return pthread_cond_timedwait(cond, mutex, &ts);
}

#endif

void rl_plat_pipe_poke(int fd) {
    if (fd < 0) return;
    char byte = 1;
    ssize_t rc = write(fd, &byte, 1);
    (void)rc;
}
