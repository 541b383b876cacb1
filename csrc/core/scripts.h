/* The Redis scripts of the lock protocol (docs/protocol.md), written once here, loaded with SCRIPT
 * LOAD and called with EVALSHA; NOSCRIPT (a restarted or flushed server) reloads and retries once.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"

typedef enum rl_script_id {
    RL_SCRIPT_ACQUIRE, /* kind_reentrant.c (each script's KEYS, ARGV and answers are there) */
    RL_SCRIPT_RELEASE,
    RL_SCRIPT_FORCE_UNLOCK,
    RL_SCRIPT_RENEW,          /* watchdog.c: every kind's renewal */
    RL_SCRIPT_FENCED_ACQUIRE, /* kind_fenced.c */
    RL_SCRIPT_FAIR_ACQUIRE,   /* kind_fair.c */
    RL_SCRIPT_FAIR_CANCEL,
    RL_SCRIPT_FAIR_RELEASE,
    RL_SCRIPT_FAIR_FORCE_UNLOCK,
    RL_SCRIPT_READ_ACQUIRE, /* kind_rw.c */
    RL_SCRIPT_WRITE_ACQUIRE,
    RL_SCRIPT_READ_RELEASE,
    RL_SCRIPT_WRITE_RELEASE,
    RL_SCRIPT_RW_FORCE_UNLOCK,
    RL_SCRIPT_COUNT
} rl_script_id;

/* The scripts' texts, each written once in its kind's file. */
extern const char rl_lua_acquire[], rl_lua_release[], rl_lua_force_unlock[], rl_lua_renew[],
    rl_lua_fenced_acquire[], rl_lua_fair_acquire[], rl_lua_fair_cancel[], rl_lua_fair_release[],
    rl_lua_fair_force_unlock[], rl_lua_read_acquire[], rl_lua_write_acquire[],
    rl_lua_read_release[], rl_lua_write_release[], rl_lua_rw_force_unlock[];

/* The first argv slots of every script command, filled by rl_scripts_run. */
#define RL_SCRIPT_ARGV_HEAD 3 /* EVALSHA, sha, numkeys */

typedef struct rl_scripts {
    pthread_mutex_t mu;
    char sha[RL_SCRIPT_COUNT][41]; /* written once, before `known` is set; never changes */
    atomic_int known[RL_SCRIPT_COUNT];
} rl_scripts;

/* The script's Lua text. */
const char *rl_script_text(rl_script_id id);

void rl_scripts_init(rl_scripts *scripts);
void rl_scripts_destroy(rl_scripts *scripts);

/* Runs n calls of script `id`, pipelined on conn. Each cmds[i].argv must leave the first
 * RL_SCRIPT_ARGV_HEAD slots (with their lens) for this function, followed by numkeys' decimal
 * text already placed by the caller in slot 2. */
rl_status rl_scripts_run(rl_scripts *scripts, rl_conn *conn, int64_t timeout_ms, rl_script_id id,
                         size_t n, rl_cmd *cmds, redisReply **replies, int idempotent,
                         rl_error *err);

#endif
