/* Replica sync (option sync_replicas > 0): after a lock write, WAIT until replicas have it, so a
 * failover right after is less likely to promote a replica that never saw the lock. */
#ifndef RL_REPLICAS_H
#define RL_REPLICAS_H

#include "conn.h"

/* WAIT <sync_replicas> <sync_timeout_ms> on the connection that made the write, and ROLE in the
 * same round trip. RL_OK when a replica acknowledged it or none is connected; RL_ERR_REPLICA when
 * replicas are connected and none acknowledged in time; a connection or server error else. */
rl_status rl_replicas_sync(rl_conn *conn, rl_error *err);

#endif
