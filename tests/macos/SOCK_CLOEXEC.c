/* Linux-only: socket type flags (platform.c's rl_plat_socket). */
#include <sys/socket.h>

int stream_socket(void) {
    return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}
