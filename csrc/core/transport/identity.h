/* Which server answers on a connection: a hash of its replication id (INFO replication's
 * master_replid). A restart, a promoted replica and a full resync each give a server a new one,
 * so a change between two renewal rounds of a hold means that the data behind it may not be what
 * the last round confirmed: the watchdog then puts the hold in doubt and verifies it. */
#ifndef RL_IDENTITY_H
#define RL_IDENTITY_H

#include <stdint.h>

#include "conn.h"

/* The command that asks: INFO replication (a few hundred bytes). */
extern const rl_cmd rl_identity_cmd;

/* The identity in its answer; 0 when it has none (an error, an unexpected answer). */
uint32_t rl_identity_of(const redisReply *r);

#endif
