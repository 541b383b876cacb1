/* The Redis scripts of the lock protocol (docs/protocol.md), written once here, loaded with SCRIPT
 * LOAD and called with EVALSHA; NOSCRIPT (a restarted or flushed server) reloads and retries once.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"

typedef enum rl_script_id {
    /* Reentrant lock (and the base of the others). */
    RL_SCRIPT_ACQUIRE,      /* KEYS: name. ARGV: lease, owner. nil = acquired afresh, status
                               REENTERED = acquired by an owner that held it, else PTTL */
    RL_SCRIPT_RELEASE,      /* KEYS: name, channel, latch. ARGV: message, lease, owner, latch ttl,
                               publish command. nil = not held, 0 = still held, 1 = released */
    RL_SCRIPT_FORCE_UNLOCK, /* KEYS: name, channel. ARGV: message, publish command. 1/0 */
    RL_SCRIPT_RENEW,        /* KEYS: names. ARGV: lease, then per key: owner field, read-hold key
                               prefix or "". Per key: 1 renewed, 0 gone, 2 held by others */
    /* Fencing tokens. */
    RL_SCRIPT_FENCED_ACQUIRE, /* KEYS: name, token. ARGV: lease, owner. {-1, token, re-entered
                                 0/1} / {PTTL, -1} */
    /* Fair lock. */
    RL_SCRIPT_FAIR_ACQUIRE, /* KEYS: name, queue, deadlines. ARGV: lease, owner, wait window, now
                               (epoch ms), queue ("1") or one try ("0"). nil / REENTERED as
                               RL_SCRIPT_ACQUIRE, else the time to wait (one try: 1) */
    RL_SCRIPT_FAIR_CANCEL,  /* KEYS: queue, deadlines, name, channel. ARGV: owner, wait window,
                               message, publish command. 1 */
    RL_SCRIPT_FAIR_RELEASE, /* KEYS: name, queue, deadlines, channel, latch. ARGV: message, lease,
                               owner, now, publish command, latch ttl. As RL_SCRIPT_RELEASE */
    RL_SCRIPT_FAIR_FORCE_UNLOCK, /* KEYS: name, queue, deadlines, channel. ARGV: message, publish
                                    command, now. 1/0 */
    /* Read/write lock. */
    RL_SCRIPT_READ_ACQUIRE,    /* KEYS: name, read-hold key prefix. ARGV: lease, owner,
                                  owner:write. As RL_SCRIPT_ACQUIRE */
    RL_SCRIPT_WRITE_ACQUIRE,   /* KEYS: name. ARGV: lease, owner:write. As RL_SCRIPT_ACQUIRE */
    RL_SCRIPT_READ_RELEASE,    /* KEYS: name, channel, read-hold key prefix, key base, latch. ARGV:
                                  message, owner, publish command, latch ttl. As RL_SCRIPT_RELEASE */
    RL_SCRIPT_WRITE_RELEASE,   /* KEYS: name, channel, latch. ARGV: message, lease, owner:write,
                                  publish command, latch ttl. As RL_SCRIPT_RELEASE */
    RL_SCRIPT_RW_FORCE_UNLOCK, /* KEYS: name, channel. ARGV: mode, message, publish command. 1/0 */
    RL_SCRIPT_COUNT
} rl_script_id;

/* The first argv slots of every script command, filled by rl_scripts_run. */
#define RL_SCRIPT_ARGV_HEAD 3 /* EVALSHA, sha, numkeys */

typedef struct rl_scripts {
    pthread_mutex_t mu;
    char sha[RL_SCRIPT_COUNT][41]; /* written once, before `known` is set; never changes */
    atomic_int known[RL_SCRIPT_COUNT];
} rl_scripts;

/* The script's Lua text (script_text.c). */
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
