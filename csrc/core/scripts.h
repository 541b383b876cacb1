/* The Redis scripts of the lock protocol (PROTOCOL.md), written once here, loaded with SCRIPT LOAD
 * and called with EVALSHA; NOSCRIPT (a restarted or flushed server) reloads and retries once. */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"

typedef enum rl_script_id {
    RL_SCRIPT_ACQUIRE,      /* KEYS: name. ARGV: lease, owner. nil = acquired, else PTTL */
    RL_SCRIPT_RELEASE,      /* KEYS: name, channel, latch. ARGV: message, lease, owner, latch ttl,
                               publish command. nil = not held, 0 = still held, 1 = released */
    RL_SCRIPT_FORCE_UNLOCK, /* KEYS: name, channel. ARGV: message, publish command. 1/0 */
    RL_SCRIPT_RENEW,        /* KEYS: names. ARGV: lease, owners. Per pair: 1 renewed,
                               0 key gone, 2 key held by others */
    RL_SCRIPT_COUNT
} rl_script_id;

/* The first argv slots of every script command, filled by rl_scripts_run. */
#define RL_SCRIPT_ARGV_HEAD 3 /* EVALSHA, sha, numkeys */

typedef struct rl_scripts {
    pthread_mutex_t mu;
    char sha[RL_SCRIPT_COUNT][41]; /* written once, before `known` is set; never changes */
    atomic_int known[RL_SCRIPT_COUNT];
} rl_scripts;

void rl_scripts_init(rl_scripts *scripts);
void rl_scripts_destroy(rl_scripts *scripts);

/* Runs n calls of script `id`, pipelined on conn. Each cmds[i].argv must leave the first
 * RL_SCRIPT_ARGV_HEAD slots (with their lens) for this function, followed by numkeys' decimal
 * text already placed by the caller in slot 2. */
rl_status rl_scripts_run(rl_scripts *scripts, rl_conn *conn, const rl_config *cfg,
                         int64_t timeout_ms, rl_script_id id, size_t n, rl_cmd *cmds,
                         redisReply **replies, int idempotent, rl_error *err);

#endif
