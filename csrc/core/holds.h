/* The client's local table of what it holds: (name, kind, context) -> hold count, lease mode and
 * health. Release and renewal read it instead of asking Redis; the watchdog walks only the holds
 * on its list. Not thread-safe by itself: the client's mutex guards it. */
#ifndef RL_HOLDS_H
#define RL_HOLDS_H

#include <stddef.h>
#include <stdint.h>

#include "redlease.h"

#define RL_OWNER_MAX 64 /* 36-char UUID + ':' + up to 20 digits + ":write" + NUL */

typedef struct rl_hold {
    struct rl_hold *bucket_next;
    struct rl_hold *watch_prev, *watch_next; /* on the watchdog's list while renewed */
    uint64_t hash;
    uint64_t context;
    int64_t count;           /* holds this context has, as this client knows */
    int64_t lease_ms;        /* lease of the latest fixed-lease acquire */
    int64_t confirmed_until; /* monotonic ms when the lease Redis last confirmed ends */
    int64_t renew_until;     /* monotonic ms after which it is not renewed (max_hold); 0 = none */
    int64_t token;           /* fenced locks: the token of the latest acquire */
    rl_lost_reason lost;     /* RL_LOST_NONE while healthy */
    rl_lock_kind kind;       /* (packed beside `lost`: a process may hold 100,000 of these) */
    unsigned watchdog : 1;   /* taken in watchdog mode: renewed until fully released */
    unsigned watched : 1;    /* on the watchdog list */
    unsigned releasing : 1;  /* a release is in flight: the watchdog leaves it alone */
    unsigned in_round : 1;   /* part of the renewal round on the wire: must not be freed */
    unsigned release_failed : 1; /* its last release failed on the network: settle it first */
    unsigned freed : 1;          /* lost, and already removed from Redis by a release */
    unsigned in_doubt : 1;       /* a renewal failed since the last confirmation (validity.c) */
    uint32_t server;             /* identity.h: the server that last renewed it (0: not known) */
    char *retry_id;              /* after a failed release: its request id (malloc'd), reused by
                                    the retry so that the unlock latch answers it; else NULL */
    const char *owner;           /* the hash field: owner, or owner:write for a write hold */
    size_t owner_len;
    const char *read_keys; /* read holds: prefix of the hold keys (prefix:1..count), else "" */
    size_t read_keys_len;
    size_t name_len;
    char name[]; /* name_len bytes + NUL */
} rl_hold;

/* The table also keeps the local state of the lock family beyond locks (semaphore.c,
 * expirable.c), under kinds no lock has: */
#define RL_HOLD_SEMAPHORE ((rl_lock_kind)64) /* context 0; count = permits this client took */
#define RL_HOLD_PERMIT                                                                             \
    ((rl_lock_kind)65) /* a permit the watchdog renews: context 0, owner =                         \
                          its id (hex), read_keys = the timeout ZSET */

static inline int rl_hold_is_lock(const rl_hold *h) {
    return h->kind <= RL_LOCK_WRITE;
}

typedef struct rl_holds {
    rl_hold **buckets;
    size_t nbuckets;
    size_t count;
    size_t locks;        /* holds of lock kinds (rl_hold_is_lock), for rl_stats.holds */
    rl_hold *watch_head; /* watched holds, newest first */
    size_t watched;
    size_t in_doubt;  /* holds with in_doubt set */
    uint64_t doubted; /* times a hold went in doubt */
} rl_holds;

/* The table's hash of a hold's identity (also used by wake_grace.c for lock names). */
uint64_t rl_holds_hash(const void *name, size_t len, rl_lock_kind kind, uint64_t context);
void rl_holds_init(rl_holds *holds);
void rl_holds_clear(rl_holds *holds); /* frees every hold */

rl_hold *rl_holds_find(const rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                       uint64_t context);
/* As rl_holds_find, among holds that share (name, kind, context): the one of `owner`. */
rl_hold *rl_holds_find_owner(const rl_holds *holds, const void *name, size_t name_len,
                             rl_lock_kind kind, uint64_t context, const char *owner);
/* Adds an empty hold (count 0); NULL when out of memory. read_keys may be NULL (not a read hold).
 */
rl_hold *rl_holds_add(rl_holds *holds, const void *name, size_t name_len, rl_lock_kind kind,
                      uint64_t context, const char *owner, const char *read_keys,
                      size_t read_keys_len);
void rl_holds_remove(rl_holds *holds, rl_hold *hold); /* unlinks and frees */

void rl_holds_watch(rl_holds *holds, rl_hold *hold);
void rl_holds_unwatch(rl_holds *holds, rl_hold *hold);

#endif
