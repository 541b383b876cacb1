/* TLS for rediss:// URLs, on OpenSSL: one context per client (trusted CAs, the client certificate,
 * the name the server's certificate must carry) and the TLS side of a connection. Built only with
 * RL_WITH_TLS; otherwise rl_tls_available() is 0 and rediss:// answers RL_ERR_UNSUPPORTED.
 *
 * Records go through a socket BIO of the core's own, which sends with RL_SEND_NOSIGNAL (a peer
 * that hung up never raises SIGPIPE: platform.h). The socket is non-blocking: the BIO waits for it
 * with poll() until the deadline of the call in progress, so a timeout bounds a whole handshake,
 * send or receive, however slowly the peer trickles its bytes. Deadlines are rl_now_ms() times. */
#ifndef RL_TLS_H
#define RL_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "redlease.h"

typedef struct rl_tls_context rl_tls_context;
typedef struct rl_tls rl_tls; /* one connection's TLS session */

int rl_tls_available(void);

/* Checks the TLS options and loads what they name (CAs, certificate, key): every problem is an
 * RL_ERR_ARGUMENT naming it, found before anything is sent. host: the URL's host, the name to
 * verify unless options->tls_server_name is set. */
rl_status rl_tls_context_new(const rl_options *options, const char *host, rl_tls_context **out,
                             rl_error *err);
void rl_tls_context_free(rl_tls_context *context);

/* The handshake on a connected socket to `host`, done by `deadline`; the name verified is
 * tls_server_name, else host. NULL on failure, with the reason (a refused certificate says why)
 * in why. */
rl_tls *rl_tls_connect(rl_tls_context *context, int fd, const char *host, int64_t deadline,
                       char *why, size_t why_size);
void rl_tls_free(rl_tls *tls);

/* As send() and recv() on the socket, waiting until `deadline` at most: bytes done, 0 when the
 * peer closed (recv), or -1 with errno set (ETIMEDOUT: the deadline passed; EAGAIN: with
 * wait = 0, nothing has arrived) and the reason in why. */
ssize_t rl_tls_send(rl_tls *tls, const void *buf, size_t len, int64_t deadline, char *why,
                    size_t why_size);
ssize_t rl_tls_recv(rl_tls *tls, void *buf, size_t len, int wait, int64_t deadline, char *why,
                    size_t why_size);

/* Decrypted bytes waiting in the session (a poll() on the socket does not see them). */
size_t rl_tls_pending(rl_tls *tls);

/* The socket was readable while no reply was due: 1 when that was only TLS housekeeping (such as
 * session tickets) and the connection is fit, 0 when the peer closed or sent data. Never blocks. */
int rl_tls_idle_check(rl_tls *tls);

#endif
