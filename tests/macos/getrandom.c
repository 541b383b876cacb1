/* Linux-only: getrandom (platform.c's rl_plat_random uses getentropy on macOS). */
#include <stddef.h>
#include <sys/random.h>
#include <sys/types.h>

ssize_t fill(void *buf, size_t n) {
    return getrandom(buf, n, 0);
}
