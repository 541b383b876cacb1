/* The client's local table of what it holds: (name, kind, context) -> hold count, lease mode and
 * health. Release and renewal read it instead of asking Redis; the watchdog walks only the holds
 * on its list. Not thread-safe by itself: the client's mutex guards it. */
#ifndef RL_HOLDS_H
#define RL_HOLDS_H

#include <stddef.h>
#include <stdint.h>

#include "redlease.h"

#define RL_OWNER_MAX 64 /* 36-char UUID + ':' + up to 20 digits + ":write" + NUL */

/* A hold is one allocation with its name inline: a process may hold a million of these, so the
 * fields are packed and nothing derivable is stored. A lock's owner field ("<client id>:<context>",
 * ":write" for a write hold) is made from the table's client id when needed (rl_hold_owner); only
 * the family's holds (a permit's id) keep theirs, after the name. tests/c/test_hold_size.c guards
 * the size. */
typedef struct rl_hold {
    struct rl_hold *bucket_next;
    struct rl_hold *watch_prev, *watch_next; /* on the watchdog's list while renewed */
    uint64_t context;
    int64_t count;           /* holds this context has, as this client knows */
    int64_t lease_ms;        /* lease of the latest fixed-lease acquire */
    int64_t confirmed_until; /* monotonic ms when the lease Redis last confirmed ends */
    int64_t renew_until;     /* monotonic ms after which it is not renewed (max_hold); 0 = none */
    int64_t token;           /* fenced locks: the token of the latest acquire */
    char *retry_id;          /* after a failed release: its request id (malloc'd), reused by
                                the retry so that the unlock latch answers it; else NULL */
    uint32_t hash;           /* rl_holds_hash, cut to 32 bits (the bucket index needs no more) */
    uint32_t server;         /* identity.h: the server that last renewed it (0: not known) */
    uint32_t name_len;
    uint32_t read_keys_len;   /* read holds: prefix of the hold keys (prefix:1..count), else 0 */
    uint8_t lost;             /* rl_lost_reason: RL_LOST_NONE while healthy */
    uint8_t kind;             /* rl_lock_kind, or RL_HOLD_SEMAPHORE / RL_HOLD_PERMIT */
    uint8_t stored_owner_len; /* the family's holds: their owner's length, stored after the name */
    unsigned watchdog : 1;    /* taken in watchdog mode: renewed until fully released */
    unsigned watched : 1;     /* on the watchdog list */
    unsigned releasing : 1;   /* a release is in flight: the watchdog leaves it alone */
    unsigned in_round : 1;    /* part of the renewal round on the wire: must not be freed */
    unsigned release_failed : 1; /* its last release failed on the network: settle it first */
    unsigned freed : 1;          /* lost, and already removed from Redis by a release */
    unsigned in_doubt : 1;       /* a renewal failed since the last confirmation (validity.c) */
    char name[]; /* name_len bytes + NUL, read keys + NUL, then a stored owner + NUL */
} rl_hold;

/* The table also keeps the local state of the lock family beyond locks (semaphore.c,
 * expirable.c), under kinds no lock has: */
#define RL_HOLD_SEMAPHORE ((rl_lock_kind)64) /* context 0; count = permits this client took */
#define RL_HOLD_PERMIT                                                                             \
    ((rl_lock_kind)65) /* a permit the watchdog renews: context 0, owner =                         \
                          its id (hex), read keys = the timeout ZSET */

static inline int rl_is_lock_kind(rl_lock_kind kind) {
    return kind <= RL_LOCK_WRITE;
}

static inline int rl_hold_is_lock(const rl_hold *h) {
    return rl_is_lock_kind((rl_lock_kind)h->kind);
}

typedef struct rl_holds {
    const char *owner_id; /* the client's id, which its locks' owner fields start with */
    rl_hold **buckets;
    size_t nbuckets;
    size_t count;
    size_t locks;        /* holds of lock kinds (rl_hold_is_lock), for rl_stats.holds */
    rl_hold *watch_head; /* watched holds, newest first */
    size_t watched;
    size_t in_doubt;  /* holds with in_doubt set */
    uint64_t doubted; /* times a hold went in doubt */
} rl_holds;

/* The read-hold key prefix (read holds), or a permit's timeout ZSET; "" for others. */
static inline const char *rl_hold_read_keys(const rl_hold *h) {
    return h->name + h->name_len + 1;
}

/* The hold's owner field in Redis, written to out (NUL-terminated); its length. For a lock:
 * "<client id>:<context>", ":write" for a write hold, as rl_client_owner and rl_lock_field make
 * it; for the family's holds, the owner they were added with. */
size_t rl_hold_owner(const rl_holds *holds, const rl_hold *h, char out[RL_OWNER_MAX]);
/* Its length alone. */
size_t rl_hold_owner_len(const rl_holds *holds, const rl_hold *h);

/* The table's hash of a hold's identity (also used by wake_grace.c for lock names). */
uint64_t rl_holds_hash(const void *name, size_t len, rl_lock_kind kind, uint64_t context);
/* owner_id: the client's id (kept by pointer: a forked child's new id is written in place). */
void rl_holds_init(rl_holds *holds, const char *owner_id);
void rl_holds_clear(rl_holds *holds); /* frees every hold */

rl_hold *rl_holds_find(const rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                       uint64_t context);
/* As rl_holds_find, among holds that share (name, kind, context): the one of `owner` (the
 * family's holds, which store their owner). */
rl_hold *rl_holds_find_owner(const rl_holds *holds, const void *name, size_t name_len,
                             rl_lock_kind kind, uint64_t context, const char *owner);
/* Adds an empty hold (count 0); NULL when out of memory. read_keys may be NULL (not a read hold).
 * owner: NULL for a lock (its owner is derived: rl_hold_owner), else at most RL_OWNER_MAX - 1
 * bytes, stored. */
rl_hold *rl_holds_add(rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                      uint64_t context, const char *owner, const char *read_keys,
                      size_t read_keys_len);
void rl_holds_remove(rl_holds *holds, rl_hold *hold); /* unlinks and frees */

void rl_holds_watch(rl_holds *holds, rl_hold *hold);
void rl_holds_unwatch(rl_holds *holds, rl_hold *hold);

#endif
