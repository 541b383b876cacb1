/* Linux-only name: macOS calls it TCP_KEEPALIVE (platform.c's rl_plat_keepalive). */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

int keep_idle(int fd, int seconds) {
    return setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &seconds, sizeof seconds);
}
