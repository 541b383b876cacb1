/* Linux-only: eventfd (the Python binding's wake-up uses a pipe on macOS). */
#include <sys/eventfd.h>

int wake_fd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}
