/* The Redis scripts of the lock protocol (docs/protocol.md), written once here, loaded with SCRIPT
 * LOAD and called with EVALSHA; NOSCRIPT (a restarted or flushed server) reloads and retries once.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"

typedef enum rl_script_id {
    RL_SCRIPT_ACQUIRE, /* kinds/reentrant.c (each script's KEYS, ARGV and answers are there) */
    RL_SCRIPT_RELEASE,
    RL_SCRIPT_FORCE_UNLOCK,
    RL_SCRIPT_RENEW,          /* watchdog.c: every kind's renewal */
    RL_SCRIPT_FENCED_ACQUIRE, /* kinds/fenced.c */
    RL_SCRIPT_FAIR_ACQUIRE,   /* kinds/fair.c */
    RL_SCRIPT_FAIR_CANCEL,
    RL_SCRIPT_FAIR_RELEASE,
    RL_SCRIPT_FAIR_FORCE_UNLOCK,
    RL_SCRIPT_READ_ACQUIRE, /* kinds/rw.c */
    RL_SCRIPT_WRITE_ACQUIRE,
    RL_SCRIPT_READ_RELEASE,
    RL_SCRIPT_WRITE_RELEASE,
    RL_SCRIPT_RW_FORCE_UNLOCK,
    RL_SCRIPT_SEM_TRY_SET, /* semaphore.c (the permit-expirable semaphore's try-set too) */
    RL_SCRIPT_SEM_ADD,
    RL_SCRIPT_SEM_ACQUIRE,
    RL_SCRIPT_SEM_RELEASE,
    RL_SCRIPT_SEM_DRAIN,
    RL_SCRIPT_PERMIT_ACQUIRE, /* expirable.c */
    RL_SCRIPT_PERMIT_RELEASE,
    RL_SCRIPT_PERMIT_UPDATE_LEASE,
    RL_SCRIPT_PERMIT_AVAILABLE,
    RL_SCRIPT_PERMIT_ADD,
    RL_SCRIPT_LATCH_TRY_SET, /* countdown.c */
    RL_SCRIPT_LATCH_COUNT_DOWN,
    RL_SCRIPT_LATCH_DELETE,
    RL_SCRIPT_FENCED_FORCE_UNLOCK, /* kind_fenced.c */
    RL_SCRIPT_FENCED_SET,          /* family/fencing.c */
    RL_SCRIPT_FENCE_DROP,
    RL_SCRIPT_COUNT
} rl_script_id;

/* The scripts' texts, each written once in its kind's file. */
extern const char rl_lua_acquire[], rl_lua_release[], rl_lua_force_unlock[], rl_lua_renew[],
    rl_lua_fenced_acquire[], rl_lua_fair_acquire[], rl_lua_fair_cancel[], rl_lua_fair_release[],
    rl_lua_fair_force_unlock[], rl_lua_read_acquire[], rl_lua_write_acquire[],
    rl_lua_read_release[], rl_lua_write_release[], rl_lua_rw_force_unlock[], rl_lua_sem_try_set[],
    rl_lua_sem_add[], rl_lua_sem_acquire[], rl_lua_sem_release[], rl_lua_sem_drain[],
    rl_lua_permit_acquire[], rl_lua_permit_release[], rl_lua_permit_update_lease[],
    rl_lua_permit_available[], rl_lua_permit_add[], rl_lua_latch_try_set[],
    rl_lua_latch_count_down[], rl_lua_latch_delete[], rl_lua_fenced_force_unlock[],
    rl_lua_fenced_set[], rl_lua_fence_drop[];

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
/* The same, with `lead` sent first in the same pipeline (no round trip of its own): its answer
 * in *lead_reply (NULL when none came; the caller frees it), whatever the calls' outcome. */
rl_status rl_scripts_run_led(rl_scripts *scripts, rl_conn *conn, int64_t timeout_ms,
                             rl_script_id id, size_t n, rl_cmd *cmds, redisReply **replies,
                             int idempotent, const rl_cmd *lead, redisReply **lead_reply,
                             rl_error *err);

/* A WRONGTYPE answer (wrong_type.c): whether `reply` is one, and the error in the user's words
 * (which of the call's keys holds a value of another type, and what redlease needs it for),
 * found with TYPE on conn. */
int rl_reply_is_wrong_type(const redisReply *reply);
rl_status rl_fail_wrong_type(rl_error *err, rl_conn *conn, int64_t timeout_ms, rl_script_id id,
                             const rl_cmd *cmd);

#endif
