/* The few system calls where Linux and macOS differ, in one place. Linux builds make exactly the
 * calls they always made (the ones the suites run); the macOS branches are the nearest
 * equivalents, compiled for x86_64 and arm64 by `make test-macos` but never run here. */
#ifndef RL_PLATFORM_H
#define RL_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* send() flags that keep a hung-up peer from raising SIGPIPE: MSG_NOSIGNAL on Linux. macOS marks
 * each socket SO_NOSIGPIPE when rl_plat_socket makes it instead, so no flag is needed there. */
#ifdef __APPLE__
#define RL_SEND_NOSIGNAL 0
#else
#define RL_SEND_NOSIGNAL MSG_NOSIGNAL
#endif

/* A SOCK_STREAM socket, non-blocking and close-on-exec, that never raises SIGPIPE; -1 with
 * errno. */
int rl_plat_socket(int family);

/* A pipe with both ends non-blocking and close-on-exec; 0, or -1 with errno. */
int rl_plat_pipe(int fds[2]);
/* Writes one byte to such a pipe's write end to wake its reader (fd < 0: nothing); a full pipe
 * already has a wake-up pending. */
void rl_plat_pipe_poke(int fd);

/* TCP keepalive probes: first after idle_s seconds of silence, then every interval_s, dead after
 * `probes` unanswered. */
void rl_plat_keepalive(int fd, int idle_s, int interval_s, int probes);

/* Fills buf with up to n bytes from the kernel's random source: how many it got. */
size_t rl_plat_random(unsigned char *buf, size_t n);

/* The text of an errno value (strerror_r differs: GNU returns it, POSIX writes buf). */
const char *rl_plat_strerror(int error, char *buf, size_t len);

/* A condition variable whose timed waits follow the monotonic clock (rl_now_ms), and a wait on
 * it until the monotonic time until_ms. */
int rl_plat_cond_init(pthread_cond_t *cond);
int rl_plat_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mutex, int64_t until_ms);

#endif
