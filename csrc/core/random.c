#include "random.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fork.h"
#include "platform.h"

static void random_bytes(unsigned char *buf, size_t n) {
    size_t got = rl_plat_random(buf, n);
    if (got == n) return;
    /* the kernel's call unavailable (very old kernel): fall back to /dev/urandom. */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    if (fd >= 0) close(fd);
    if (got < n) {
        /* Last resort so ids stay distinct per process even without an entropy source. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x =
            (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
        for (size_t i = got; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (unsigned char)x;
        }
    }
}

static const char hexdigits[] = "0123456789abcdef";

/* Every release draws a request id: from a per-thread pool of random bytes refilled POOL_BYTES
 * at a time, one system call per 32 releases instead of one each. A forked child drops the pool
 * it inherited: its parent hands out those same bytes next. */
#define POOL_BYTES 512
static _Thread_local struct {
    unsigned char bytes[POOL_BYTES];
    size_t used;
    uint64_t generation;
} pool = {.used = POOL_BYTES};

static void pooled_bytes(unsigned char *buf, size_t n) {
    uint64_t generation = rl_fork_generation();
    if (pool.used + n > POOL_BYTES || pool.generation != generation) {
        random_bytes(pool.bytes, POOL_BYTES);
        pool.used = 0;
        pool.generation = generation;
    }
    memcpy(buf, pool.bytes + pool.used, n);
    memset(pool.bytes + pool.used, 0, n); /* handed out once: not kept in memory after */
    pool.used += n;
}

void rl_random_hex(char *out, size_t nbytes) {
    unsigned char buf[64];
    if (nbytes > sizeof buf) nbytes = sizeof buf;
    pooled_bytes(buf, nbytes);
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hexdigits[buf[i] >> 4];
        out[2 * i + 1] = hexdigits[buf[i] & 15];
    }
    out[2 * nbytes] = '\0';
}

void rl_random_uuid(char out[37]) {
    unsigned char b[16];
    random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hexdigits[b[i] >> 4];
        out[o++] = hexdigits[b[i] & 15];
    }
    out[o] = '\0';
}
