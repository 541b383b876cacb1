/* One Redis connection on a socket the core owns: opening it (connect timeout, keepalive, AUTH,
 * SELECT), pipelined exchanges, and the rule for when a failed exchange may be retried on a fresh
 * connection. Commands are formatted here (RESP) and sent with RL_SEND_NOSIGNAL (platform.h), so
 * a peer that hung up never raises SIGPIPE and no signal mask is touched per call; replies are
 * parsed by hiredis's RESP reader. A connection belongs to one thread at a time; rl_conn_interrupt
 * is the one call another thread may make on it. */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "redirect.h"
#include "redlease.h"
#include "tls.h"
#include "url.h"

/* "[host]:port" with the longest host name a URL can carry (255), or a socket path. */
#define RL_WHERE_MAX 272

struct rl_target;

/* Where a client's connections go when the URL alone does not say (a Sentinel's master): the
 * deployment hands the connection layer a resolver, which conn.c asks without knowing who
 * answers. Its calls come from any thread opening or using a connection, possibly with a pool's
 * or a subscriber's mutex held (never fd_mu): they take only the resolver's own leaf locks. */
typedef struct rl_resolver {
    /* The server a new connection goes to: sets t->host (written into host[host_size]),
     * t->port, t->epoch and t->must_be_master; the URL's credentials and db are set already.
     * May ask the network (a Sentinel's ask), within the command timeout. */
    rl_status (*resolve)(void *state, struct rl_target *t, char *host, size_t host_size,
                         rl_error *err);
    /* A connection to the server resolved in `epoch` saw it fail (error, READONLY, ROLE): the
     * next resolve asks again. */
    void (*doubt)(void *state, uint64_t epoch);
    /* The epoch now: a connection resolved in an older one is reopened before it writes. */
    uint64_t (*epoch)(void *state);
} rl_resolver;

/* What every connection of one client shares: where to connect, the options, and closing. */
typedef struct rl_config {
    rl_endpoint endpoint;
    rl_options options;
    pthread_mutex_t fd_mu;       /* a connection's socket is set, closed and interrupted under it */
    atomic_int closing;          /* the client is closing: no connection opens any more */
    rl_tls_context *tls;         /* rediss://: every connection speaks TLS; NULL: plain */
    const rl_resolver *resolver; /* where connections go; NULL: the endpoint */
    void *resolver_state;
    void (*on_deferred)(void *arg); /* a pooled connection went idle with deferred commands */
    void *on_deferred_arg;
    const char *client_id; /* the client's id: each connection names itself with it and
                              options.client_name (conn_name.h); NULL: no name */
} rl_config;

typedef struct rl_conn {
    rl_config *cfg;
    int fd;      /* -1 when closed */
    rl_tls *tls; /* the TLS session on fd, or NULL */
    int is_unix;
    int must_be_master;       /* opened to a master the resolver named */
    uint64_t epoch;           /* ... in this resolver epoch */
    char where[RL_WHERE_MAX]; /* host:port or the socket path, for messages */
    int readonly;             /* the last call met READONLY (rl_conn_lost_master) */
    int replicas_seen;        /* replicas ROLE listed at the last replica sync; -1: not asked yet */
    uint32_t server;          /* identity.h: the server reached, from the INFO deferred when it
                                 opened; 0 until that answer is read, or when it had none */
    const char *node_host;    /* a cluster node's connection: opened to it (the node outlives it) */
    int node_port;
    rl_redirect redirect; /* a cluster node's last MOVED/ASK/TRYAGAIN/CLUSTERDOWN (scripts.c) */
    int maybe_sent;       /* the last failed exchange may have reached the server */
    redisReader *reader;
    char *out; /* formatted commands not sent yet */
    size_t out_len, out_cap;
    int deferred;            /* commands at the start of `out` whose replies nobody waits for: they
                                go out with the next exchange and their replies are read and dropped */
    uint64_t exchanges;      /* round trips made, for statistics */
    int64_t timeout_ms;      /* the command timeout it was opened with (rl_conn_flush, _receive) */
    int64_t deadline;        /* rl_now_ms() by which the call in progress must end */
    int64_t sock_timeout_ms; /* a plain socket's SO_RCVTIMEO/SO_SNDTIMEO now (0: not set) */
    int64_t connect_by;      /* > 0: no connect (and TLS handshake) goes on past this rl_now_ms(),
                                whatever the connect timeout: a call that must end by then */
    char why[512];           /* the last I/O failure, for messages: room for a verification error
                                with a 253-character host name (never cut, the docs quote it) */
} rl_conn;

/* One command: argc arguments (binary-safe). */
typedef struct rl_cmd {
    int argc;
    const char **argv;
    size_t *lens;
} rl_cmd;

void rl_config_init(rl_config *cfg);
void rl_config_destroy(rl_config *cfg);

/* A closed connection of cfg's client. */
void rl_conn_init(rl_conn *conn, rl_config *cfg);

/* Where a connection goes: a host and port (or a unix socket path in host), its AUTH and SELECT;
 * a master the resolver named must also answer ROLE as master. */
typedef struct rl_target {
    const char *host;
    int port;
    int is_unix;
    const char *user, *password;
    int db;
    int must_be_master;
    uint64_t epoch; /* the resolver's epoch that named this master */
    int holds_data; /* a server of the locks (not a sentinel): its identity is asked, and with
                       sync_aof, whether it can WAITAOF */
} rl_target;

/* (Re)opens conn to the client's server (the resolver's answer when there is one): the connect and
 * the TLS handshake (when the URL says so) within the connect timeout, TCP keepalive and no-delay,
 * then AUTH and SELECT as the URL says within timeout_ms; CLIENT SETNAME (conn_name.h) and INFO
 * replication (the server's identity, identity.h) are deferred to go out with the first command
 * (no round trip of their own; a refusal is ignored: the name is for people, and a server of
 * unknown identity is compared with none). With sync_aof, a WAITAOF in the handshake checks that
 * the server can wait for its append-only file: RL_ERR_UNSUPPORTED when not. RL_ERR_CLOSED once
 * the client is closing.
 *
 * Every timeout is a deadline for a whole call: the socket is non-blocking and each wait for it
 * is a poll() until the call's deadline, so a peer that trickles bytes cannot stretch a call. */
rl_status rl_conn_open(rl_conn *conn, int64_t timeout_ms, rl_error *err);
/* The same to a given target (a sentinel, say). */
rl_status rl_conn_open_to(rl_conn *conn, const rl_target *target, int64_t timeout_ms,
                          rl_error *err);
void rl_conn_close(rl_conn *conn); /* frees everything; the connection can be opened again */

/* Closes the socket without touching reader state another thread may have been using when the
 * process forked; that memory is given up. */
void rl_conn_abandon(rl_conn *conn);

/* From any thread: makes every blocking call on conn's socket (connect, send, receive) return
 * at once with an error. Used when the client closes; the owner then closes the connection. */
void rl_conn_interrupt(rl_conn *conn);

/* Sends n commands in one write (after any deferred ones) and reads their n replies into
 * replies[] (to be freed with freeReplyObject), all within timeout_ms (opening a connection
 * first has its own timeouts). On a connection error the connection is closed. When
 * `idempotent` is set, or when nothing can have reached the server yet, the exchange is retried
 * once on a fresh connection, within the same timeout_ms. Error replies are returned as replies,
 * not as failures. */
rl_status rl_conn_exchange(rl_conn *conn, int64_t timeout_ms, size_t n, const rl_cmd *cmds,
                           redisReply **replies, int idempotent, rl_error *err);

/* An exchange in two halves, so that one thread can have exchanges in flight on several
 * connections at once (the watchdog's round over a cluster's nodes): send (opening the connection
 * when closed) writes n commands; receive then reads their n replies, both by send's deadline
 * (timeout_ms). Not retried; on a connection error the connection is closed. */
rl_status rl_conn_send(rl_conn *conn, int64_t timeout_ms, size_t n, const rl_cmd *cmds,
                       rl_error *err);
rl_status rl_conn_receive_replies(rl_conn *conn, size_t n, redisReply **replies, rl_error *err);

/* Queues a command whose reply nobody waits for: it goes out with the next exchange on this
 * connection, costing no write of its own; dropped if the connection closes first. */
void rl_conn_defer(rl_conn *conn, const rl_cmd *cmd);

/* The pieces of an exchange, for the subscriber's own loop. append formats a command into the
 * output buffer (-1: out of memory); flush sends it all within the connection's timeout;
 * receive reads what has arrived (with `wait`, waiting up to the timeout when nothing has;
 * without, never blocking); next_reply takes
 * one parsed reply (*reply NULL when none is complete), the deferred commands' replies dropped.
 * Each returns 0 or -1 with the reason in conn->why; on -1 close the connection. buffered: bytes
 * received but not yet seen by a poll() of the socket (decrypted TLS data): read them before
 * polling. */
int rl_conn_append(rl_conn *conn, const rl_cmd *cmd);
int rl_conn_flush(rl_conn *conn);
int rl_conn_receive(rl_conn *conn, int wait);
int rl_conn_next_reply(rl_conn *conn, redisReply **reply);
size_t rl_conn_buffered(rl_conn *conn);

/* The server answered READONLY: it is no longer the master (nothing was written). The connection
 * is closed, the resolver (a Sentinel) is asked again, and `readonly` is set so that the caller
 * may try once more on a fresh connection. Returns RL_ERR_CONNECTION. */
rl_status rl_conn_lost_master(rl_conn *conn, rl_error *err);

/* Fails with an error reply from Redis: RL_ERR_CONNECTION when it asks for authentication
 * (NOAUTH, WRONGPASS: a configuration problem, as a refused AUTH), RL_ERR_SERVER else. */
rl_status rl_fail_reply(rl_error *err, const char *what, const redisReply *reply);

/* "host:port" or the socket path, for messages. */
void rl_config_describe(const rl_config *cfg, char *out, size_t size);

#endif
