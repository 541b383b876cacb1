/* Replica sync (option sync_replicas > 0): after a lock write, WAIT until replicas have it, so a
 * failover right after is less likely to promote a replica that never saw the lock. */
#ifndef RL_REPLICAS_H
#define RL_REPLICAS_H

#include "conn.h"

/* WAIT <sync_replicas> <sync_timeout_ms> on the connection that made the write, and ROLE in the
 * same round trip. RL_OK when a replica acknowledged it or none is connected; RL_ERR_REPLICA when
 * replicas are connected and none acknowledged in time; a connection or server error else.
 * Replicas that are not there are not waited for: when this connection's last ROLE listed none,
 * ROLE alone is asked first, and WAIT follows only if one is listed now. *acked: how many
 * replicas acknowledged the write, -1 when no WAIT was sent. */
rl_status rl_replicas_sync(rl_conn *conn, int *acked, rl_error *err);

#endif
