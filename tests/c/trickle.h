/* A loopback peer that never finishes an answer: it accepts every connection and writes one byte
 * of `payload` to each every 300 ms (after `payload` it goes on with `filler`), as a slow or
 * hostile server that keeps each system call busy but never completes a reply. For proving that
 * timeouts are deadlines for a whole call, not for each read. */
#ifndef RL_TEST_TRICKLE_H
#define RL_TEST_TRICKLE_H

#include <pthread.h>
#include <stddef.h>

#define TRICKLE_MAX_CONNS 16

typedef struct trickle {
    int port;
    int listen_fd;
    int stop_pipe[2];
    pthread_t thread;
    const char *payload;
    size_t payload_len;
    char filler;
    int max_bytes; /* each connection is closed after this many bytes (bounds an unfixed run) */
} trickle;

/* Starts the peer on a free loopback port; 0 on success. */
int trickle_start(trickle *t, const char *payload, size_t payload_len, char filler, int max_bytes);
void trickle_stop(trickle *t);

#endif
