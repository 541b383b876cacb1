/* What a server's INFO says about the commands it has, for the deployments that need one newer
 * than Redis 6: a Redis Cluster's waiters and releases use sharded pub/sub (SSUBSCRIBE, SPUBLISH),
 * which came with Redis 7.0 (every Valkey has it). */
#ifndef RL_SERVER_VERSION_H
#define RL_SERVER_VERSION_H

#include <hiredis/hiredis.h>

#include "redlease.h"

/* RL_OK when the server at host:port, whose answer to INFO SERVER is `info`, has sharded pub/sub;
 * RL_ERR_UNSUPPORTED naming the server, its version and the feature when it has not. An answer
 * that says no version (INFO refused to this user) passes: the server's own errors will tell. */
rl_status rl_server_has_sharded_pubsub(const redisReply *info, const char *host, int port,
                                       rl_error *err);

#endif
