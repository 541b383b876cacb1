/* rl_inspect's last step: the names of the clients that hold or wait for a lock, read from
 * CLIENT LIST at the lock's server (each client's connections name themselves: conn_name.h). */
#ifndef RL_HOLDER_NAMES_H
#define RL_HOLDER_NAMES_H

#include <stddef.h>

#include "client.h"

/* Fills in->owners[].name and in->queue[].name for clients with a connection to the server of
 * `name` (a cluster: its slot's master); one round trip, none when nobody holds or waits.
 * Names are for people: a server that refuses CLIENT LIST or cannot be reached leaves them "". */
void rl_holder_names(rl_client *c, const char *name, size_t len, rl_inspection *in);

#endif
