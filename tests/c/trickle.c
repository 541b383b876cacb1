#include "trickle.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define TRICKLE_EVERY_MS 300

typedef struct peer {
    int fd;
    int sent;
} peer;

static void *trickle_main(void *arg) {
    trickle *t = arg;
    peer peers[TRICKLE_MAX_CONNS];
    int n = 0;
    int64_t next = now_ms() + TRICKLE_EVERY_MS;
    for (;;) {
        int64_t left = next - now_ms();
        struct pollfd p[2] = {{.fd = t->listen_fd, .events = POLLIN},
                              {.fd = t->stop_pipe[0], .events = POLLIN}};
        int rc = poll(p, 2, left < 0 ? 0 : (int)left);
        if (rc < 0 && errno != EINTR) break;
        if (rc > 0 && p[1].revents) break;
        if (rc > 0 && (p[0].revents & POLLIN)) {
            int fd = accept(t->listen_fd, NULL, NULL);
            if (fd >= 0 && n < TRICKLE_MAX_CONNS)
                peers[n++] = (peer){fd, 0};
            else if (fd >= 0)
                close(fd);
        }
        if (now_ms() < next) continue;
        next += TRICKLE_EVERY_MS;
        for (int i = 0; i < n; i++) {
            char drain[4096]; /* what the client sent: read and ignored */
            while (recv(peers[i].fd, drain, sizeof drain, MSG_DONTWAIT) > 0) {
            }
            size_t at = (size_t)peers[i].sent;
            char byte = at < t->payload_len ? t->payload[at] : t->filler;
            if (peers[i].sent >= t->max_bytes ||
                send(peers[i].fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
                close(peers[i].fd);
                peers[i--] = peers[--n];
                continue;
            }
            peers[i].sent++;
        }
    }
    for (int i = 0; i < n; i++)
        close(peers[i].fd);
    return NULL;
}

int trickle_start(trickle *t, const char *payload, size_t payload_len, char filler, int max_bytes) {
    memset(t, 0, sizeof *t);
    t->payload = payload;
    t->payload_len = payload_len;
    t->filler = filler;
    t->max_bytes = max_bytes;
    t->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (t->listen_fd < 0 || bind(t->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(t->listen_fd, 16) != 0 ||
        getsockname(t->listen_fd, (struct sockaddr *)&a, &len) != 0 ||
        pipe2(t->stop_pipe, O_CLOEXEC) != 0) {
        if (t->listen_fd >= 0) close(t->listen_fd);
        return -1;
    }
    t->port = ntohs(a.sin_port);
    if (pthread_create(&t->thread, NULL, trickle_main, t) != 0) {
        close(t->listen_fd);
        close(t->stop_pipe[0]);
        close(t->stop_pipe[1]);
        return -1;
    }
    return 0;
}

void trickle_stop(trickle *t) {
    (void)!write(t->stop_pipe[1], "x", 1);
    pthread_join(t->thread, NULL);
    close(t->listen_fd);
    close(t->stop_pipe[0]);
    close(t->stop_pipe[1]);
}
