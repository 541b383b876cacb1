/* The lock kinds of Redisson (RLock, RFencedLock, RFairLock, RReadWriteLock). Each file of this
 * folder holds one kind's Redis scripts (their text, written once), its keys beyond the name, and
 * its calls: which script with which keys and arguments; kinds.c says which kind a lock is and
 * holds what their calls share. lock_calls.c (above) dispatches to the kinds and reads the answers
 * every kind gives alike; lock.c runs the flow every kind shares. */
#ifndef RL_KIND_H
#define RL_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "lock.h"

/* One acquire attempt of `owner`: lease, and for fair locks whether to queue and for how long. */
typedef struct rl_acquire_args {
    const char *owner;
    size_t owner_len;
    int64_t lease_ms;
    int queue;
    int64_t window_ms;
} rl_acquire_args;

/* One release of hash field `field` under the unlock latch `latch`; delete_latch goes out after
 * the answer, `wrote` tells replica sync which answers are writes (NULL: no sync). */
typedef struct rl_release_args {
    const char *field;
    size_t field_len;
    int64_t lease_ms;
    const char *latch;
    size_t latch_len;
    const rl_cmd *delete_latch;
    rl_reply_test wrote;
} rl_release_args;

/* An acquire's answer in a kind's own form (read_answer): acquired (with its fencing token, -1
 * without one) and re-entered, or refused with how long to wait (-1: not known). */
typedef struct rl_acquire_answer {
    int acquired;
    int reentered;
    int64_t token;
    int64_t wait_hint_ms;
} rl_acquire_answer;

typedef struct rl_kind {
    const char *channel_prefix; /* the unlock channel is prefix(channel_prefix, name); a kind's
                                   other keys are made per call (rl_lock_key) */
    rl_status (*acquire)(rl_lock *l, const rl_acquire_args *a, redisReply **reply, rl_error *err);
    /* An answer beyond what every kind answers (nil or REENTERED: acquired; an integer: the
     * holder's PTTL): 1 when it read it into *out, 0 for the common reading (NULL: none). */
    int (*read_answer)(const rl_acquire_args *a, const redisReply *r, rl_acquire_answer *out);
    rl_status (*release)(rl_lock *l, const rl_release_args *a, redisReply **reply, rl_error *err);
    rl_status (*force_unlock)(rl_lock *l, redisReply **reply, rl_error *err);
    /* Leave the wait queue (best effort; a dead waiter's place ends with its window; NULL: the
     * kind has no queue). */
    void (*leave_queue)(rl_lock *l, const char *owner, size_t owner_len, int64_t window_ms);
} rl_kind;

extern const rl_kind rl_kind_reentrant, rl_kind_fenced, rl_kind_fair, rl_kind_read, rl_kind_write;

/* The kind of a lock of that kind (kinds.c). */
const rl_kind *rl_kind_of(rl_lock_kind kind);

/* The reentrant lock's release and force unlock, which the fenced lock shares. */
rl_status rl_reentrant_release(rl_lock *l, const rl_release_args *a, redisReply **reply,
                               rl_error *err);
rl_status rl_reentrant_force_unlock(rl_lock *l, redisReply **reply, rl_error *err);

/* ---- what the kinds' calls share ----------------------------------------------------------- */

/* The publish command passed to the scripts: "publish"; on a cluster rl_client_script sends
 * "spublish" in its place (sharded pub/sub, as Redisson on Redis 7 clusters), found by this
 * address. */
extern const char rl_publish_command[];
#define RL_PUBLISH rl_publish_command
#define RL_ONE_MAY_GO "0" /* unlock message: one waiter may proceed */
#define RL_ALL_MAY_GO "1" /* write unlock message: every waiter may proceed */

typedef struct rl_arg {
    const char *p;
    size_t len;
} rl_arg;

rl_arg rl_arg_str(const char *s);
rl_arg rl_arg_bytes(const void *p, size_t len);
rl_arg rl_arg_num(char buf[24], int64_t v);

/* EVALSHA <script> <nkeys> args... on a pooled connection (see rl_client_script). */
rl_status rl_kind_run(rl_lock *l, rl_script_id id, int nkeys, const rl_arg *args, int nargs,
                      int idempotent, const rl_cmd *then_send, rl_reply_test wrote,
                      redisReply **reply, rl_error *err);

/* a + b + c (c may be NULL), NUL-terminated, malloc'd; NULL when out of memory. */
char *rl_joined(const char *a, size_t a_len, const char *b, size_t b_len, const char *c,
                size_t *len);

/* Answers that are writes, for replica sync. */
int rl_reply_is_acquired(const redisReply *r); /* nil or REENTERED */
int rl_reply_is_reentered(const redisReply *r);
int rl_reply_is_one(const redisReply *r);

#endif
