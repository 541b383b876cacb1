/* One Redis connection: opening it (timeouts, keepalive, AUTH, SELECT), pipelined exchanges, and
 * the rule for when a failed exchange may be retried on a fresh connection. */
#ifndef RL_CONN_H
#define RL_CONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "redlease.h"
#include "url.h"

typedef struct rl_config {
    rl_endpoint endpoint;
    rl_options options;
} rl_config;

typedef struct rl_conn {
    redisContext *ctx; /* NULL when closed */
    int owed_replies;  /* replies of commands sent without waiting, read before the next exchange */
    uint64_t exchanges; /* round trips made, for statistics */
    int64_t timeout_ms; /* the socket's read/write timeout now */
} rl_conn;

/* One command: argc arguments (binary-safe). */
typedef struct rl_cmd {
    int argc;
    const char **argv;
    size_t *lens;
} rl_cmd;

/* (Re)opens conn: connect with the connect timeout, set the command timeout (timeout_ms), TCP
 * keepalive, close-on-exec, then AUTH and SELECT as the URL says. */
rl_status rl_conn_open(rl_conn *conn, const rl_config *cfg, int64_t timeout_ms, rl_error *err);
void rl_conn_close(rl_conn *conn);

/* Closes the socket without touching hiredis state another thread may have been using when the
 * process forked; the context's memory is given up. */
void rl_conn_abandon(rl_conn *conn);

/* Sends n commands in one write and reads their n replies into replies[] (to be freed with
 * freeReplyObject). On a connection error the connection is closed. When `idempotent` is set, or
 * when nothing can have reached the server yet, the exchange is retried once on a fresh
 * connection. Error replies are returned as replies, not as failures. */
rl_status rl_conn_exchange(rl_conn *conn, const rl_config *cfg, int64_t timeout_ms, size_t n,
                           const rl_cmd *cmds, redisReply **replies, int idempotent,
                           rl_error *err);

/* Sends one command without waiting for its reply (read and dropped before the next exchange).
 * Best effort: a failure only closes the connection. */
void rl_conn_send_only(rl_conn *conn, const rl_cmd *cmd);

/* Fails with an error reply from Redis: RL_ERR_CONNECTION when it asks for authentication
 * (NOAUTH, WRONGPASS: a configuration problem, as a refused AUTH), RL_ERR_SERVER else. */
rl_status rl_fail_reply(rl_error *err, const char *what, const redisReply *reply);

/* "host:port" or the socket path, for messages. */
void rl_config_describe(const rl_config *cfg, char *out, size_t size);

#endif
