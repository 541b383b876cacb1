#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "error.h"
#include "sigpipe.h"

static struct timeval to_timeval(int64_t ms) {
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

void rl_config_describe(const rl_config *cfg, char *out, size_t size) {
    const rl_endpoint *ep = &cfg->endpoint;
    if (ep->is_unix) snprintf(out, size, "%s", ep->host);
    else if (strchr(ep->host, ':')) snprintf(out, size, "[%s]:%d", ep->host, ep->port);
    else snprintf(out, size, "%s:%d", ep->host, ep->port);
}

static rl_status io_failure(rl_conn *conn, const rl_config *cfg, rl_error *err, const char *what) {
    char where[160];
    rl_config_describe(cfg, where, sizeof where);
    const char *detail = conn->ctx && conn->ctx->err ? conn->ctx->errstr : "connection closed";
    if (conn->ctx && conn->ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
        detail = "timed out";
    rl_status st = rl_fail(err, RL_ERR_CONNECTION, "%s %s: %s", what, where, detail);
    rl_conn_close(conn);
    return st;
}

void rl_conn_close(rl_conn *conn) {
    if (conn->ctx) redisFree(conn->ctx);
    conn->ctx = NULL;
    conn->owed_replies = 0;
}

void rl_conn_abandon(rl_conn *conn) {
    if (conn->ctx && conn->ctx->fd >= 0) close(conn->ctx->fd);
    conn->ctx = NULL;
    conn->owed_replies = 0;
}

/* Reads one reply, with SIGPIPE kept away (hiredis flushes pending writes first). */
static int get_reply(redisContext *ctx, redisReply **reply) {
    rl_sigpipe_guard guard;
    rl_sigpipe_block(&guard);
    void *r = NULL;
    int rc = redisGetReply(ctx, &r);
    rl_sigpipe_restore(&guard);
    *reply = r;
    return rc;
}

static rl_status handshake(rl_conn *conn, const rl_config *cfg, rl_error *err) {
    const rl_endpoint *ep = &cfg->endpoint;
    const char *argv[3];
    size_t lens[3];
    char db[16];
    int n = 0;
    if (ep->password) {
        argv[n++] = "AUTH";
        if (ep->user) argv[n++] = ep->user;
        argv[n++] = ep->password;
        for (int i = 0; i < n; i++) lens[i] = strlen(argv[i]);
        redisAppendCommandArgv(conn->ctx, n, argv, lens);
    }
    if (ep->db != 0) {
        snprintf(db, sizeof db, "%d", ep->db);
        const char *sel[2] = {"SELECT", db};
        size_t sel_lens[2] = {6, strlen(db)};
        redisAppendCommandArgv(conn->ctx, 2, sel, sel_lens);
    }
    int expected = (ep->password ? 1 : 0) + (ep->db != 0 ? 1 : 0);
    for (int i = 0; i < expected; i++) {
        redisReply *reply;
        if (get_reply(conn->ctx, &reply) != REDIS_OK) return io_failure(conn, cfg, err, "handshake with");
        int is_auth = ep->password && i == 0;
        if (reply->type == REDIS_REPLY_ERROR) {
            rl_status st = rl_fail(err, RL_ERR_CONNECTION, "%s refused: %.*s",
                                   is_auth ? "authentication" : "SELECT", (int)reply->len, reply->str);
            freeReplyObject(reply);
            rl_conn_close(conn);
            return st;
        }
        freeReplyObject(reply);
    }
    return RL_OK;
}

rl_status rl_conn_open(rl_conn *conn, const rl_config *cfg, int64_t timeout_ms, rl_error *err) {
    rl_conn_close(conn);
    const rl_endpoint *ep = &cfg->endpoint;
    struct timeval connect_tv = to_timeval(cfg->options.connect_timeout_ms);
    redisContext *ctx = ep->is_unix ? redisConnectUnixWithTimeout(ep->host, connect_tv)
                                    : redisConnectWithTimeout(ep->host, ep->port, connect_tv);
    if (!ctx) return rl_fail(err, RL_ERR_MEMORY, "out of memory opening a connection");
    conn->ctx = ctx;
    if (ctx->err) return io_failure(conn, cfg, err, "cannot connect to");
    if (redisSetTimeout(ctx, to_timeval(timeout_ms)) != REDIS_OK)
        return io_failure(conn, cfg, err, "cannot set timeouts on");
    conn->timeout_ms = timeout_ms;
    if (!ep->is_unix) redisEnableKeepAlive(ctx);
    int flags = fcntl(ctx->fd, F_GETFD);
    if (flags >= 0) fcntl(ctx->fd, F_SETFD, flags | FD_CLOEXEC);
    return handshake(conn, cfg, err);
}

/* Before a command is written: reads the replies still owed for commands sent without waiting,
 * as far as they have arrived (never blocking), and checks that an idle connection was not closed
 * by the server. Returns 0 when the connection is fit to write to. */
static int fit_for_writing(rl_conn *conn) {
    struct pollfd p = {.fd = conn->ctx->fd, .events = POLLIN};
    if (poll(&p, 1, 0) == 0) return 1; /* nothing arrived: alive, owed replies still in flight */
    if (conn->owed_replies == 0) return 0; /* data or EOF nobody asked for */
    if (redisBufferRead(conn->ctx) != REDIS_OK) return 0;
    void *owed;
    while (conn->owed_replies > 0) {
        if (redisGetReplyFromReader(conn->ctx, &owed) != REDIS_OK) return 0;
        if (!owed) break;
        freeReplyObject(owed);
        conn->owed_replies--;
    }
    return 1;
}

/* One attempt. *maybe_sent tells whether the commands may have reached the server. Replies still
 * owed are read after ours are written, so they cost no extra round trip. */
static rl_status exchange_once(rl_conn *conn, const rl_config *cfg, size_t n, const rl_cmd *cmds,
                               redisReply **replies, int *maybe_sent, rl_error *err) {
    *maybe_sent = 0;
    if (!fit_for_writing(conn)) {
        rl_conn_close(conn);
        return rl_fail(err, RL_ERR_CONNECTION, "stale connection");
    }
    for (size_t i = 0; i < n; i++) {
        if (redisAppendCommandArgv(conn->ctx, cmds[i].argc, cmds[i].argv, cmds[i].lens) != REDIS_OK) {
            rl_conn_close(conn);
            return rl_fail(err, RL_ERR_MEMORY, "out of memory formatting a command");
        }
    }
    *maybe_sent = 1;
    conn->exchanges++;
    while (conn->owed_replies > 0) {
        redisReply *owed;
        if (get_reply(conn->ctx, &owed) != REDIS_OK) return io_failure(conn, cfg, err, "lost connection to");
        freeReplyObject(owed);
        conn->owed_replies--;
    }
    for (size_t i = 0; i < n; i++) {
        if (get_reply(conn->ctx, &replies[i]) != REDIS_OK) {
            for (size_t j = 0; j < i; j++) {
                freeReplyObject(replies[j]);
                replies[j] = NULL;
            }
            return io_failure(conn, cfg, err, "lost connection to");
        }
    }
    return RL_OK;
}

rl_status rl_fail_reply(rl_error *err, const char *what, const redisReply *r) {
    const char *text = r && r->str ? r->str : "";
    int len = r && r->str ? (int)r->len : 0;
    int auth = (len >= 6 && memcmp(text, "NOAUTH", 6) == 0) ||
               (len >= 9 && memcmp(text, "WRONGPASS", 9) == 0);
    return rl_fail(err, auth ? RL_ERR_CONNECTION : RL_ERR_SERVER, "%s refused: %.*s", what, len,
                   text);
}

rl_status rl_conn_exchange(rl_conn *conn, const rl_config *cfg, int64_t timeout_ms, size_t n,
                           const rl_cmd *cmds, redisReply **replies, int idempotent,
                           rl_error *err) {
    rl_status st = RL_ERR_CONNECTION;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!conn->ctx) {
            st = rl_conn_open(conn, cfg, timeout_ms, err);
            if (st != RL_OK) return st;
        } else if (conn->timeout_ms != timeout_ms) { /* e.g. WAIT, longer than other commands */
            if (redisSetTimeout(conn->ctx, to_timeval(timeout_ms)) != REDIS_OK)
                return io_failure(conn, cfg, err, "cannot set timeouts on");
            conn->timeout_ms = timeout_ms;
        }
        int maybe_sent;
        st = exchange_once(conn, cfg, n, cmds, replies, &maybe_sent, err);
        if (st != RL_ERR_CONNECTION) return st;
        if (maybe_sent && !idempotent) return st;
    }
    return st;
}

void rl_conn_send_only(rl_conn *conn, const rl_cmd *cmd) {
    if (!conn->ctx) return;
    if (redisAppendCommandArgv(conn->ctx, cmd->argc, cmd->argv, cmd->lens) != REDIS_OK) {
        rl_conn_close(conn);
        return;
    }
    rl_sigpipe_guard guard;
    rl_sigpipe_block(&guard);
    int done = 0, rc = REDIS_OK;
    while (!done && rc == REDIS_OK) rc = redisBufferWrite(conn->ctx, &done);
    rl_sigpipe_restore(&guard);
    if (rc != REDIS_OK) rl_conn_close(conn);
    else conn->owed_replies++;
}
