#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "conn_name.h"
#include "error.h"
#include "identity.h"
#include "platform.h"

#define READ_CHUNK 16384
#define OUT_BUFFER_KEPT 65536 /* a bigger output buffer is freed once sent */
#define KEEPALIVE_IDLE_S 15   /* as hiredis: probe an idle peer after 15 s, every 5 s, 3 times */
#define KEEPALIVE_INTERVAL_S 5
#define KEEPALIVE_PROBES 3

void rl_config_init(rl_config *cfg) {
    pthread_mutex_init(&cfg->fd_mu, NULL);
    atomic_init(&cfg->closing, 0);
}

void rl_config_destroy(rl_config *cfg) {
    pthread_mutex_destroy(&cfg->fd_mu);
}

void rl_config_describe(const rl_config *cfg, char *out, size_t size) {
    const rl_endpoint *ep = &cfg->endpoint;
    if (ep->is_unix)
        snprintf(out, size, "%s", ep->host);
    else if (strchr(ep->host, ':'))
        snprintf(out, size, "[%s]:%d", ep->host, ep->port);
    else
        snprintf(out, size, "%s:%d", ep->host, ep->port);
}

void rl_conn_init(rl_conn *conn, rl_config *cfg) {
    memset(conn, 0, sizeof *conn);
    conn->cfg = cfg;
    conn->fd = -1;
    conn->replicas_seen = -1;
}

/* A connection to the server the resolver named in `epoch` saw it fail. */
static void doubt(const rl_conn *conn, uint64_t epoch) {
    const rl_config *cfg = conn->cfg;
    if (cfg->resolver) cfg->resolver->doubt(cfg->resolver_state, epoch);
}

static void set_why(rl_conn *conn, const char *text) {
    size_t n = strlen(text);
    if (n >= sizeof conn->why) n = sizeof conn->why - 1;
    memcpy(conn->why, text, n);
    conn->why[n] = '\0';
}

static void set_why_errno(rl_conn *conn, int error) {
    char buf[80];
    if (error == EAGAIN || error == EWOULDBLOCK || error == ETIMEDOUT)
        set_why(conn, "timed out");
    else
        set_why(conn, rl_plat_strerror(error, buf, sizeof buf));
}

/* ---- the socket: set, closed and interrupted under cfg->fd_mu ------------------------------ */

/* Publishes a new socket unless the client is closing (then -1: the caller closes fd). */
static int publish_fd(rl_conn *conn, int fd) {
    pthread_mutex_lock(&conn->cfg->fd_mu);
    int closing = atomic_load(&conn->cfg->closing);
    if (!closing) conn->fd = fd, conn->replicas_seen = -1, conn->server = 0; /* a new server? */
    pthread_mutex_unlock(&conn->cfg->fd_mu);
    return closing ? -1 : 0;
}

static void close_socket(rl_conn *conn) {
    rl_tls_free(conn->tls);
    conn->tls = NULL;
    if (conn->fd < 0) return;
    pthread_mutex_lock(&conn->cfg->fd_mu);
    close(conn->fd);
    conn->fd = -1;
    pthread_mutex_unlock(&conn->cfg->fd_mu);
}

void rl_conn_interrupt(rl_conn *conn) {
    pthread_mutex_lock(&conn->cfg->fd_mu);
    /* shutdown, not close: the owner may be blocked on the socket, and its number must not be
     * reused under it. A connect in progress is cut short too. */
    if (conn->fd >= 0) shutdown(conn->fd, SHUT_RDWR);
    pthread_mutex_unlock(&conn->cfg->fd_mu);
}

static void forget_buffers(rl_conn *conn) {
    conn->tls = NULL;
    conn->reader = NULL;
    conn->out = NULL;
    conn->out_len = conn->out_cap = 0;
    conn->deferred = 0;
}

void rl_conn_close(rl_conn *conn) {
    close_socket(conn);
    if (conn->reader) redisReaderFree(conn->reader);
    free(conn->out);
    forget_buffers(conn);
}

void rl_conn_abandon(rl_conn *conn) {
    if (conn->fd >= 0) close(conn->fd); /* the only thread of a forked child: no lock needed */
    conn->fd = -1;
    forget_buffers(conn);
}

/* ---- opening ------------------------------------------------------------------------------- */

/* How far a plain socket's timeouts may be from what is left of the deadline before they are
 * set again: a wait ends at most this much early or late, and an exchange that starts with the
 * command timeout of the one before costs no system call for it. */
#define TIMEOUT_SLACK_MS 10

/* Before a blocking send or recv on a plain socket: its timeouts are what is left of the call's
 * deadline. 0, or -1 with why ("timed out") when nothing is left. */
static int bound_by_deadline(rl_conn *conn) {
    int64_t left = conn->deadline - rl_now_ms();
    if (left <= 0) {
        set_why_errno(conn, ETIMEDOUT);
        return -1;
    }
    int64_t diff = conn->sock_timeout_ms - left;
    if (conn->sock_timeout_ms == 0 || diff > TIMEOUT_SLACK_MS || diff < -TIMEOUT_SLACK_MS) {
        struct timeval tv = {.tv_sec = (time_t)(left / 1000),
                             .tv_usec = (suseconds_t)(left % 1000) * 1000};
        setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        conn->sock_timeout_ms = left;
    }
    return 0;
}

static int wait_connected(int fd, int64_t deadline) {
    int revents = rl_poll_until(fd, POLLOUT, deadline);
    if (revents == 0) errno = ETIMEDOUT;
    if (revents <= 0) return -1;
    int error = 0;
    socklen_t len = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return -1;
    if (error == 0 && (revents & (POLLHUP | POLLERR))) error = ECONNABORTED; /* interrupted */
    errno = error;
    return error ? -1 : 0;
}

/* One connect() within the deadline; 0 with conn->fd set, or -1 with the reason in conn->why. */
static int connect_to(rl_conn *conn, int family, const struct sockaddr *addr, socklen_t len,
                      int64_t deadline) {
    int fd = rl_plat_socket(family);
    if (fd < 0) {
        set_why_errno(conn, errno);
        return -1;
    }
    if (publish_fd(conn, fd) != 0) {
        close(fd);
        set_why(conn, "the client is closed");
        return -1;
    }
    int rc = connect(fd, addr, len);
    if (rc != 0 && errno == EINPROGRESS) rc = wait_connected(fd, deadline);
    if (rc != 0) {
        set_why_errno(conn, errno);
        close_socket(conn);
        return -1;
    }
    return 0;
}

static int connect_tcp(rl_conn *conn, const char *host, int port_number, int64_t deadline) {
    char port[8];
    snprintf(port, sizeof port, "%d", port_number);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *found = NULL;
    int rc = getaddrinfo(host, port, &hints, &found);
    if (rc != 0) {
        set_why(conn, gai_strerror(rc));
        return -1;
    }
    rc = -1;
    for (struct addrinfo *a = found; a && rc != 0 && !atomic_load(&conn->cfg->closing);
         a = a->ai_next)
        rc = connect_to(conn, a->ai_family, a->ai_addr, a->ai_addrlen, deadline);
    freeaddrinfo(found);
    return rc;
}

static int connect_unix(rl_conn *conn, const char *path, int64_t deadline) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof addr.sun_path) {
        set_why(conn, "the socket path is too long");
        return -1;
    }
    memcpy(addr.sun_path, path, len + 1);
    return connect_to(conn, AF_UNIX, (const struct sockaddr *)&addr, sizeof addr, deadline);
}

/* No delay, keepalive. A TLS socket stays non-blocking: its every wait is a poll() bounded by
 * the deadline of the call in progress. A plain one blocks in send and recv (one system call
 * where a try, a poll and a second try take three), bounded by the same deadline through
 * SO_SNDTIMEO/SO_RCVTIMEO (bound_by_deadline): never by a per-read timeout that a trickling
 * peer renews. */
static void configure(rl_conn *conn) {
    conn->sock_timeout_ms = 0;
    if (!conn->cfg->tls) {
        int flags = fcntl(conn->fd, F_GETFL);
        if (flags >= 0) fcntl(conn->fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    if (!conn->is_unix) {
        int on = 1, idle = KEEPALIVE_IDLE_S, interval = KEEPALIVE_INTERVAL_S,
            probes = KEEPALIVE_PROBES;
        setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        setsockopt(conn->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
        rl_plat_keepalive(conn->fd, idle, interval, probes);
    }
}

static rl_status failure(rl_conn *conn, rl_error *err, const char *what) {
    char where[RL_WHERE_MAX];
    if (conn->where[0])
        snprintf(where, sizeof where, "%s", conn->where);
    else
        rl_config_describe(conn->cfg, where, sizeof where);
    rl_status st = atomic_load(&conn->cfg->closing)
                       ? rl_fail(err, RL_ERR_CLOSED, "the client is closed")
                       : rl_fail(err, RL_ERR_CONNECTION, "%s %s: %s", what, where, conn->why);
    if (conn->must_be_master) doubt(conn, conn->epoch);
    /* Closed abortively: the kernel drops what is still unsent. A graceful close would go on
     * retransmitting it, and a command given up on here (a release into a partition) could
     * reach Redis after the heal, when this owner holds the lock again. */
    if (conn->fd >= 0) {
        struct linger drop = {.l_onoff = 1, .l_linger = 0};
        setsockopt(conn->fd, SOL_SOCKET, SO_LINGER, &drop, sizeof drop);
    }
    rl_conn_close(conn);
    return st;
}

static rl_status exchange_once(rl_conn *conn, size_t n, const rl_cmd *cmds, redisReply **replies,
                               int *maybe_sent, rl_error *err);

static int is_master(const redisReply *role) {
    return role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
           role->element[0]->type == REDIS_REPLY_STRING &&
           strcmp(role->element[0]->str, "master") == 0;
}

/* WAITAOF's refusal of the handshake's check (sync_aof): what the user must change, said. */
static rl_status aof_refused(rl_conn *conn, const redisReply *r, rl_error *err) {
    if (strstr(r->str, "unknown command"))
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "sync_aof needs WAITAOF (Redis 7.2 or later, Valkey), which %s does not "
                       "know: %.*s",
                       conn->where, (int)r->len, r->str);
    if (strstr(r->str, "replica")) /* a failover under way: as ROLE's "no master" */
        return rl_fail(err, RL_ERR_CONNECTION, "%s is no master (a failover under way?)",
                       conn->where);
    return rl_fail(err, RL_ERR_UNSUPPORTED,
                   "sync_aof needs `appendonly yes` on %s; WAITAOF refused: %.*s", conn->where,
                   (int)r->len, r->str);
}

/* AUTH and SELECT as the target says, ROLE for a Sentinel's master, and with sync_aof a WAITAOF
 * that nothing is pending for (answered at once when the server can): one round trip. */
static rl_status handshake(rl_conn *conn, const rl_target *t, rl_error *err) {
    const char *auth[3], *select[2] = {"SELECT", NULL}, *role[1] = {"ROLE"};
    const char *aof[4] = {"WAITAOF", "1", "0", "1"};
    size_t auth_lens[3], select_lens[2], role_lens[1] = {4}, aof_lens[4] = {7, 1, 1, 1};
    char db[16];
    rl_cmd cmds[4];
    size_t n = 0, auth_at = 9, role_at = 9, aof_at = 9;
    int argc = 0;
    if (t->password) {
        auth[argc++] = "AUTH";
        if (t->user) auth[argc++] = t->user;
        auth[argc++] = t->password;
        for (int i = 0; i < argc; i++)
            auth_lens[i] = strlen(auth[i]);
        auth_at = n;
        cmds[n++] = (rl_cmd){argc, auth, auth_lens};
    }
    if (t->db != 0) {
        snprintf(db, sizeof db, "%d", t->db);
        select[1] = db;
        select_lens[0] = 6, select_lens[1] = strlen(db);
        cmds[n++] = (rl_cmd){2, select, select_lens};
    }
    if (t->must_be_master) {
        role_at = n;
        cmds[n++] = (rl_cmd){1, role, role_lens};
    }
    if (t->holds_data && conn->cfg->options.sync_aof) {
        aof_at = n;
        cmds[n++] = (rl_cmd){4, aof, aof_lens};
    }
    if (n == 0) return RL_OK;
    redisReply *replies[4] = {NULL, NULL, NULL, NULL};
    int maybe_sent;
    rl_status st = exchange_once(conn, n, cmds, replies, &maybe_sent, err);
    if (st != RL_OK) return st;
    for (size_t i = 0; i < n && st == RL_OK; i++) {
        if (i == aof_at && replies[i]->type == REDIS_REPLY_ERROR)
            st = aof_refused(conn, replies[i], err);
        else if (replies[i]->type == REDIS_REPLY_ERROR)
            st = rl_fail(err, RL_ERR_CONNECTION, "%s refused: %.*s",
                         i == auth_at   ? "authentication"
                         : i == role_at ? "ROLE"
                                        : "SELECT",
                         (int)replies[i]->len, replies[i]->str);
        else if (i == role_at && !is_master(replies[i]))
            st = rl_fail(err, RL_ERR_CONNECTION, "%s is no master (a failover under way?)",
                         conn->where);
    }
    for (size_t i = 0; i < n; i++)
        freeReplyObject(replies[i]);
    if (st != RL_OK) {
        if (t->must_be_master) doubt(conn, t->epoch);
        rl_conn_close(conn);
    }
    return st;
}

/* CLIENT SETNAME (conn_name.h), deferred: it goes out with the connection's first command, so
 * opening one takes no round trip more than before, and its reply is dropped unread: a refusal
 * (an ACL, a renamed command) leaves the connection unnamed, as the name is for people reading
 * CLIENT LIST and rl_inspect, never needed to work. */
static void name_connection(rl_conn *conn) {
    if (!conn->cfg->client_id) return;
    char name[RL_CONN_NAME_MAX];
    const char *argv[3] = {"CLIENT", "SETNAME", name};
    size_t lens[3] = {6, 7,
                      rl_conn_name(conn->cfg->client_id, conn->cfg->options.client_name, name)};
    rl_cmd cmd = {3, argv, lens};
    rl_conn_defer(conn, &cmd);
}

/* INFO replication, deferred as the name is: its answer, read before the first command's, tells
 * which server took that command (identity.h), so a hold knows its server from the acquire on,
 * not only from its first renewal. */
static void ask_identity(rl_conn *conn) {
    rl_conn_defer(conn, &rl_identity_cmd);
}

rl_status rl_conn_open_to(rl_conn *conn, const rl_target *t, int64_t timeout_ms, rl_error *err) {
    rl_conn_close(conn);
    if (atomic_load(&conn->cfg->closing))
        return rl_fail(err, RL_ERR_CLOSED, "the client is closed");
    conn->is_unix = t->is_unix;
    conn->epoch = t->epoch;
    conn->must_be_master = t->must_be_master;
    if (t->is_unix)
        snprintf(conn->where, sizeof conn->where, "%s", t->host);
    else if (strchr(t->host, ':'))
        snprintf(conn->where, sizeof conn->where, "[%s]:%d", t->host, t->port);
    else
        snprintf(conn->where, sizeof conn->where, "%s:%d", t->host, t->port);
    conn->reader = redisReaderCreate();
    if (!conn->reader) return rl_fail(err, RL_ERR_MEMORY, "out of memory opening a connection");
    /* The connect timeout bounds the connect and the TLS handshake together. */
    int64_t deadline = rl_now_ms() + conn->cfg->options.connect_timeout_ms;
    if (conn->connect_by > 0 && conn->connect_by < deadline) deadline = conn->connect_by;
    int rc = t->is_unix ? connect_unix(conn, t->host, deadline)
                        : connect_tcp(conn, t->host, t->port, deadline);
    if (rc != 0) return failure(conn, err, "cannot connect to");
    configure(conn);
    if (conn->cfg->tls) {
        conn->tls = rl_tls_connect(conn->cfg->tls, conn->fd, t->host, deadline, conn->why,
                                   sizeof conn->why);
        if (!conn->tls) return failure(conn, err, "cannot connect to");
    }
    conn->timeout_ms = timeout_ms;
    conn->deadline = rl_now_ms() + timeout_ms; /* AUTH, SELECT, ROLE: one exchange */
    rl_status st = handshake(conn, t, err);
    if (st == RL_OK) name_connection(conn);
    if (st == RL_OK && t->holds_data) ask_identity(conn);
    return st;
}

rl_status rl_conn_open(rl_conn *conn, int64_t timeout_ms, rl_error *err) {
    const rl_endpoint *ep = &conn->cfg->endpoint;
    rl_target t = {.host = ep->host,
                   .port = ep->port,
                   .is_unix = ep->is_unix,
                   .user = ep->user,
                   .password = ep->password,
                   .db = ep->db,
                   .holds_data = 1};
    char master[256];
    if (conn->node_host) { /* a cluster node: the URL's credentials, db 0 */
        t.host = conn->node_host;
        t.port = conn->node_port;
    } else if (conn->cfg->resolver) {
        rl_status st =
            conn->cfg->resolver->resolve(conn->cfg->resolver_state, &t, master, sizeof master, err);
        if (st != RL_OK) {
            rl_conn_close(conn);
            return st;
        }
    }
    return rl_conn_open_to(conn, &t, timeout_ms, err);
}

/* ---- commands out, replies in -------------------------------------------------------------- */

static int reserve(rl_conn *conn, size_t more) {
    if (conn->out_len + more <= conn->out_cap) return 0;
    size_t cap = conn->out_cap ? conn->out_cap : 256;
    while (cap < conn->out_len + more)
        cap *= 2;
    char *grown = realloc(conn->out, cap);
    if (!grown) return -1;
    conn->out = grown;
    conn->out_cap = cap;
    return 0;
}

/* "<prefix><decimal>\r\n" */
static char *put_header(char *p, char prefix, size_t value) {
    char digits[24];
    int n = 0;
    do
        digits[n++] = (char)('0' + value % 10);
    while ((value /= 10) > 0);
    *p++ = prefix;
    while (n > 0)
        *p++ = digits[--n];
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

int rl_conn_append(rl_conn *conn, const rl_cmd *cmd) {
    size_t need = 24;
    for (int i = 0; i < cmd->argc; i++)
        need += cmd->lens[i] + 26;
    if (reserve(conn, need) != 0) {
        set_why(conn, "out of memory formatting a command");
        return -1;
    }
    char *p = put_header(conn->out + conn->out_len, '*', (size_t)cmd->argc);
    for (int i = 0; i < cmd->argc; i++) {
        p = put_header(p, '$', cmd->lens[i]);
        memcpy(p, cmd->argv[i], cmd->lens[i]);
        p += cmd->lens[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    conn->out_len = (size_t)(p - conn->out);
    return 0;
}

/* Sends the whole output buffer; *sent tells how much the kernel took. */
static int flush_counting(rl_conn *conn, size_t *sent) {
    size_t off = 0;
    int rc = 0;
    while (off < conn->out_len) {
        if (!conn->tls && bound_by_deadline(conn) != 0) {
            rc = -1;
            break;
        }
        ssize_t n = conn->tls
                        ? rl_tls_send(conn->tls, conn->out + off, conn->out_len - off,
                                      conn->deadline, conn->why, sizeof conn->why)
                        : send(conn->fd, conn->out + off, conn->out_len - off, RL_SEND_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EINTR && !conn->tls) {
            continue;
        } else {
            if (!conn->tls) set_why_errno(conn, n < 0 ? errno : EPIPE); /* TLS wrote its why */
            rc = -1;
            break;
        }
    }
    *sent = off;
    conn->out_len = 0;
    if (conn->out_cap > OUT_BUFFER_KEPT) {
        free(conn->out);
        conn->out = NULL;
        conn->out_cap = 0;
    }
    return rc;
}

int rl_conn_flush(rl_conn *conn) {
    size_t sent;
    conn->deadline = rl_now_ms() + conn->timeout_ms;
    return flush_counting(conn, &sent);
}

/* What has arrived, or (wait) what arrives by the call's deadline. */
static int receive_some(rl_conn *conn, int wait) {
    char buf[READ_CHUNK];
    for (;;) {
        if (wait && !conn->tls && bound_by_deadline(conn) != 0) return -1;
        ssize_t n = conn->tls ? rl_tls_recv(conn->tls, buf, sizeof buf, wait, conn->deadline,
                                            conn->why, sizeof conn->why)
                              : recv(conn->fd, buf, sizeof buf, wait ? 0 : MSG_DONTWAIT);
        if (n > 0) {
            if (redisReaderFeed(conn->reader, buf, (size_t)n) == REDIS_OK) return 0;
            set_why(conn, "out of memory reading a reply");
            return -1;
        }
        if (n < 0 && errno == EINTR && !conn->tls) continue;
        int would_block = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (would_block && !wait) return 0; /* nothing */
        if (n == 0)
            set_why(conn, "the server closed the connection");
        else if (!conn->tls)
            set_why_errno(conn, errno);
        return -1;
    }
}

int rl_conn_receive(rl_conn *conn, int wait) {
    if (wait) conn->deadline = rl_now_ms() + conn->timeout_ms;
    return receive_some(conn, wait);
}

size_t rl_conn_buffered(rl_conn *conn) {
    return conn->tls ? rl_tls_pending(conn->tls) : 0;
}

/* The next complete reply in the reader, or NULL. */
static int reader_get(rl_conn *conn, redisReply **reply) {
    void *r = NULL;
    if (redisReaderGetReply(conn->reader, &r) != REDIS_OK) {
        set_why(conn, conn->reader->errstr[0] ? conn->reader->errstr : "protocol error");
        return -1;
    }
    *reply = r;
    return 0;
}

/* Reads and drops the deferred commands' replies (nobody waits for them) that have arrived;
 * with `wait`, until all have. */
static int drop_deferred(rl_conn *conn, int wait) {
    while (conn->deferred > 0) {
        redisReply *r;
        if (reader_get(conn, &r) != 0) return -1;
        if (r) {
            conn->deferred--;
            uint32_t server = rl_identity_of(r); /* 0 but for the INFO */
            if (server) conn->server = server;
            freeReplyObject(r);
        } else if (!wait) {
            return 0;
        } else if (receive_some(conn, 1) != 0) {
            return -1;
        }
    }
    return 0;
}

int rl_conn_next_reply(rl_conn *conn, redisReply **reply) {
    *reply = NULL;
    if (drop_deferred(conn, 0) != 0) return -1;
    return conn->deferred > 0 ? 0 : reader_get(conn, reply);
}

static int read_reply(rl_conn *conn, redisReply **reply) {
    for (;;) {
        if (rl_conn_next_reply(conn, reply) != 0) return -1;
        if (*reply) return 0;
        if (receive_some(conn, 1) != 0) return -1;
    }
}

/* Before writing to a connection that sat idle: anything readable (the server's close, an error,
 * bytes nobody asked for) means it is not fit; nothing has been written then. */
static int fit_for_writing(rl_conn *conn) {
    if (rl_conn_buffered(conn) > 0) return 0;
    /* Opened to a master that is no more (the resolver moved on): reopen to the new one. */
    const rl_config *cfg = conn->cfg;
    if (cfg->resolver && conn->must_be_master &&
        conn->epoch != cfg->resolver->epoch(cfg->resolver_state))
        return 0;
    struct pollfd p = {.fd = conn->fd, .events = POLLIN};
    if (poll(&p, 1, 0) == 0) return 1;
    /* TLS: what arrived may be housekeeping (session tickets), not the server's close. */
    return conn->tls && rl_tls_idle_check(conn->tls);
}

/* Writes n commands after any deferred ones. *maybe_sent tells whether any of these commands may
 * have reached the server. */
static rl_status send_part(rl_conn *conn, size_t n, const rl_cmd *cmds, int *maybe_sent,
                           rl_error *err) {
    *maybe_sent = 0;
    if (!fit_for_writing(conn)) {
        set_why(conn, "the server closed the idle connection");
        return failure(conn, err, "stale connection to");
    }
    size_t ours_from = conn->out_len; /* deferred commands go first */
    for (size_t i = 0; i < n; i++) {
        if (rl_conn_append(conn, &cmds[i]) != 0) {
            conn->out_len = ours_from;
            return rl_fail(err, RL_ERR_MEMORY, "out of memory formatting a command");
        }
    }
    size_t sent;
    int rc = flush_counting(conn, &sent);
    *maybe_sent = sent > ours_from;
    if (rc != 0) return failure(conn, err, "lost connection to");
    conn->exchanges++;
    return RL_OK;
}

/* Reads the deferred commands' replies (dropped), then n replies into replies[]. */
static rl_status receive_part(rl_conn *conn, size_t n, redisReply **replies, rl_error *err) {
    if (drop_deferred(conn, 1) != 0) return failure(conn, err, "lost connection to");
    for (size_t i = 0; i < n; i++) {
        if (read_reply(conn, &replies[i]) != 0) {
            for (size_t j = 0; j < i; j++) {
                freeReplyObject(replies[j]);
                replies[j] = NULL;
            }
            return failure(conn, err, "lost connection to");
        }
    }
    return RL_OK;
}

/* One attempt. *maybe_sent tells whether any of these commands may have reached the server. */
static rl_status exchange_once(rl_conn *conn, size_t n, const rl_cmd *cmds, redisReply **replies,
                               int *maybe_sent, rl_error *err) {
    rl_status st = send_part(conn, n, cmds, maybe_sent, err);
    return st == RL_OK ? receive_part(conn, n, replies, err) : st;
}

rl_status rl_conn_send(rl_conn *conn, int64_t timeout_ms, size_t n, const rl_cmd *cmds,
                       rl_error *err) {
    rl_status st = conn->fd < 0 ? rl_conn_open(conn, timeout_ms, err) : RL_OK;
    conn->deadline = rl_now_ms() + timeout_ms; /* rl_conn_receive_replies ends by it too */
    int maybe_sent = 0;
    if (st == RL_OK) st = send_part(conn, n, cmds, &maybe_sent, err);
    conn->maybe_sent = maybe_sent;
    return st;
}

rl_status rl_conn_receive_replies(rl_conn *conn, size_t n, redisReply **replies, rl_error *err) {
    return receive_part(conn, n, replies, err);
}

rl_status rl_conn_lost_master(rl_conn *conn, rl_error *err) {
    rl_status st =
        rl_fail(err, RL_ERR_CONNECTION, "%s is no longer the master (READONLY)", conn->where);
    doubt(conn, conn->epoch);
    rl_conn_close(conn);
    conn->readonly = 1;
    return st;
}

rl_status rl_fail_reply(rl_error *err, const char *what, const redisReply *r) {
    const char *text = r && r->str ? r->str : "";
    int len = r && r->str ? (int)r->len : 0;
    int auth = (len >= 6 && memcmp(text, "NOAUTH", 6) == 0) ||
               (len >= 9 && memcmp(text, "WRONGPASS", 9) == 0);
    return rl_fail(err, auth ? RL_ERR_CONNECTION : RL_ERR_SERVER, "%s refused: %.*s", what, len,
                   text);
}

rl_status rl_conn_exchange(rl_conn *conn, int64_t timeout_ms, size_t n, const rl_cmd *cmds,
                           redisReply **replies, int idempotent, rl_error *err) {
    rl_status st = RL_ERR_CONNECTION;
    int64_t deadline = rl_now_ms() + timeout_ms; /* the retry stays within the caller's time */
    conn->maybe_sent = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int64_t left = attempt == 0 ? timeout_ms : deadline - rl_now_ms();
        if (left <= 0) return st;
        if (conn->fd < 0) {
            st = rl_conn_open(conn, left, err);
            if (st != RL_OK) return st;
        }
        /* The exchange's deadline: its whole time (opening apart) the first time; the retry
         * (its opening included) ends by the call's. */
        conn->deadline = attempt == 0 ? rl_now_ms() + timeout_ms : deadline;
        int maybe_sent;
        st = exchange_once(conn, n, cmds, replies, &maybe_sent, err);
        conn->maybe_sent = maybe_sent;
        if (st != RL_ERR_CONNECTION) return st;
        if (maybe_sent && !idempotent) return st;
    }
    return st;
}

void rl_conn_defer(rl_conn *conn, const rl_cmd *cmd) {
    if (conn->fd >= 0 && rl_conn_append(conn, cmd) == 0) conn->deferred++;
}
