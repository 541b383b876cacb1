/* A lock object and the Redis calls of each lock kind. lock.c runs the flow every kind shares
 * (waiting, the local hold table, renewal, loss); lock_calls.c knows each kind's keys, scripts
 * and answers. */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "redlease.h"

/* A lock handle: one allocation, the name and its channel inline. The other keys (the unlock
 * latch, the fenced token, the fair queue, the read/write key base) are derived from the name
 * where a call needs them (rl_name_prefixed), so that a process holding a million locks does not
 * keep them all. */
struct rl_lock {
    rl_client *client;
    rl_lock_kind kind;
    char *channel; /* prefix("redisson_lock__channel" or, read/write, "redisson_rwlock", name);
                      a fair waiter listens on channel + ":" + owner. Points into name[] */
    size_t name_len;
    size_t channel_len;
    char name[]; /* name_len bytes + NUL, then the channel + NUL */
};

#define RL_REQUEST_ID_BYTES 16 /* 32 hex chars */

/* One acquire in progress. */
typedef struct rl_attempt {
    char owner[RL_OWNER_MAX]; /* "<client id>:<context>" */
    size_t owner_len;
    int64_t lease;  /* ms sent as the lease: the caller's, or the watchdog timeout */
    int64_t window; /* fair locks: how long a queued place is kept */
    int64_t token;  /* fenced locks: the token of the acquire */
    int reentered;  /* Redis answered that this owner already held it */
    int64_t sent_at;
    uint32_t server;       /* identity.h: the server that granted it (0: not known) */
    int64_t yield_until;   /* wake_grace.c: leave the lock to a waiter we woke until then; -1 */
    uint64_t yield_floor;  /* and the observer's floor (rl_sub_observe) */
    int fresh;             /* the context held none of this lock: a failover's grace applies */
    int64_t grace_left;    /* the last try was refused by failover_grace.c, this long before */
    int late;              /* the last grant was answered after its lease had ended: given back */
    uint64_t masters_seen; /* the client's master_changes when the try began */
} rl_attempt;

/* An acquire's steps, shared by the blocking (rl_lock_acquire_with) and the async
 * (lock_async.c) paths, between rl_client_enter and rl_client_leave. begin: checks the options
 * and the context's hold (a failed release is settled first) and fills the attempt. try: one
 * attempt (queue: fair locks join the wait queue); RL_NOT_ACQUIRED with *wait_hint_ms as
 * rl_lock_call_acquire. end: with the outcome of the tries, records the hold (and starts its
 * renewal) or leaves the fair queue; returns the acquire's final status. */
rl_status rl_acquire_begin(rl_lock *lock, uint64_t context, const rl_acquire_options *options,
                           rl_attempt *a, rl_error *err);
rl_status rl_acquire_try(rl_lock *lock, rl_attempt *a, int queue, int64_t *wait_hint_ms,
                         rl_error *err);
rl_status rl_acquire_end(rl_lock *lock, uint64_t context, rl_attempt *a,
                         const rl_acquire_options *options, rl_status st, rl_error *err);

/* A new handle of `kind` for name (its channel made inline); NULL when out of memory. */
rl_lock *rl_lock_alloc(rl_lock_kind kind, const void *name, size_t name_len);

/* prefix(p, name) for this lock's name (names.h), malloc'd; NULL when out of memory. */
char *rl_lock_key(const rl_lock *lock, const char *prefix, size_t *len);

/* Read/write: the key base, the name when it has a '{' else "{name}" (read-hold keys start so);
 * malloc'd, NULL when out of memory. */
char *rl_lock_key_base(const rl_lock *lock, size_t *len);

/* The hash field of `owner` for this lock: owner, or owner + ":write" on the write side.
 * out needs RL_OWNER_MAX bytes. */
size_t rl_lock_field(const rl_lock *lock, const char *owner, size_t owner_len, char *out);

/* Read side: the prefix of owner's read-hold keys, suffix(name, owner) + ":rwlock_timeout"
 * (malloc'd; NULL when out of memory or not a read lock). */
char *rl_lock_read_keys(const rl_lock *lock, const char *owner, size_t owner_len, size_t *len);

/* The channel a waiter of `owner` listens on (malloc'd, or NULL when out of memory). */
char *rl_lock_wait_channel(const rl_lock *lock, const char *owner, size_t owner_len, size_t *len);

/* What an acquire's answer (not an error reply; freed here) says, as rl_lock_call_acquire's. */
rl_status rl_lock_acquire_answer(rl_lock *lock, const char *owner, size_t owner_len, int64_t lease,
                                 int queue, int64_t wait_window_ms, redisReply *reply,
                                 int64_t *wait_hint_ms, int64_t *token, int *reentered,
                                 rl_error *err);

/* One acquire attempt for `owner`. RL_OK: acquired (*token set for fenced locks; *reentered: this
 * owner already held it in Redis, else it was taken afresh). RL_NOT_ACQUIRED:
 * held by others, *wait_hint_ms = how long it may stay so (-1: unknown). `queue` (fair locks):
 * join the wait queue, keeping the place for `wait_window_ms`. An acquire the replicas did not
 * acknowledge is undone (RL_ERR_REPLICA). */
rl_status rl_lock_call_acquire(rl_lock *lock, const char *owner, size_t owner_len, int64_t lease,
                               int queue, int64_t wait_window_ms, int64_t *wait_hint_ms,
                               int64_t *token, int *reentered, rl_error *err);

/* Fair locks: leave the wait queue (best effort; a dead waiter's place ends with its window). */
void rl_lock_call_leave_queue(rl_lock *lock, const char *owner, size_t owner_len,
                              int64_t wait_window_ms);

/* One release of the hold of hash field `field` under the unlock latch of `request_id`. *reply:
 * nil = not held, 0 = still held, 1 = released. RL_ERR_REPLICA with *reply when replicas did not
 * acknowledge it. `retried`: an earlier attempt under this request id failed on the network; its
 * latch is then kept for its TTL, to answer a copy of that attempt that reaches Redis late. */
rl_status rl_lock_call_release(rl_lock *lock, const char *field, size_t field_len, int64_t lease,
                               const char *request_id, int retried, int sync, redisReply **reply,
                               rl_error *err);

/* Takes back an acquire of `owner` that must not stand (one release under a fresh latch). */
void rl_lock_call_undo_acquire(rl_lock *lock, const char *owner, size_t owner_len, int64_t lease);

/* Removes every count of hash field `field` from Redis: releases, each under a fresh latch, until
 * Redis answers "released" or "not held" (at most RL_RELEASE_FULLY_MAX). *still_held counts the
 * releases answered "still held". */
#define RL_RELEASE_FULLY_MAX 100
rl_status rl_lock_call_release_fully(rl_lock *lock, const char *field, size_t field_len,
                                     int64_t lease, int *still_held, rl_error *err);

/* Force unlock; *deleted = 1 when it was held. */
rl_status rl_lock_call_force_unlock(rl_lock *lock, int *deleted, rl_error *err);

#endif
