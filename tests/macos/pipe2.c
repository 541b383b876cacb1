/* Linux-only (macOS has it only from 27): pipe2 (platform.c's rl_plat_pipe). */
#include <fcntl.h>
#include <unistd.h>

int wake_pipe(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}
