/* redlease: Redisson-compatible distributed locks on Redis, the C core.
 *
 * One rl_client per process (or per Redis deployment) is shared by any number of host threads.
 * Locks are stored in Redisson's format (see docs/protocol.md), so redlease, Redisson and the other
 * redlease bindings exclude each other on the same name.
 *
 * Every function that can fail returns an rl_status and, when it fails, fills *err (which may be
 * NULL) with the same status and a message. Times are milliseconds.
 *
 * An owner is (client, context): the client's random UUID plus a context id that the caller
 * chooses (the Python binding passes a per-thread id, the Lua binding a per-coroutine id). Two
 * contexts never share a hold; the same context re-entering a lock increments its hold count.
 */
#ifndef REDLEASE_H
#define REDLEASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RL_VERSION "0.1.0"

typedef enum rl_status {
    RL_OK = 0,
    RL_NOT_ACQUIRED = 1, /* held by another owner: the one try failed or the wait timed out */
    RL_NOT_OWNED = 2,    /* released or used by a context that does not hold it */
    RL_LOST = 3,         /* this context's hold was lost while held (see rl_lost_reason) */
    RL_ABORTED = 4,      /* the wait hook asked to stop waiting; nothing is held */
    RL_IN_DOUBT = 5,     /* rl_lock_check: the hold may still be valid, but not surely for as
                            long as asked (a renewal failed or is late, or its lease is ending) */
    RL_ERR_ARGUMENT = 10,
    RL_ERR_CONNECTION = 11, /* unreachable, timed out, authentication refused */
    RL_ERR_SERVER = 12,     /* Redis answered with an error (e.g. WRONGTYPE) */
    RL_ERR_CLOSED = 13,     /* the client was closed */
    RL_ERR_MEMORY = 14,
    RL_ERR_UNSUPPORTED = 15, /* e.g. rediss:// in a build without TLS */
    RL_ERR_REPLICA = 16      /* sync_replicas: replicas are connected, none acknowledged in time;
                                sync_aof: the write was not on disk in time */
} rl_status;

typedef struct rl_error {
    rl_status status;
    char message[1024];    /* room for every message whole (a TLS verification error names a host
                              twice, each up to 253 characters) */
    int lost_reason;       /* an rl_lost_reason when status is RL_LOST, else 0 */
    int hold_kept;         /* a failed rl_lock_release that left the hold counted: calling release
                              again retries the same release (the only failures that do so) */
    int64_t grace_left_ms; /* RL_NOT_ACQUIRED from the failover grace (failover_grace_ms), not
                              another owner: how much of it is left; else 0 */
} rl_error;

/* Stable lowercase names ("ok", "not_acquired", "connection", ...) for messages and bindings. */
const char *rl_status_name(rl_status status);

/* An RL_NOT_OWNED message says a hold "is not held by this context"; a host names its owners
 * (thread, task, greenlet, coroutine): rewrites the message in place with that word. 1 when it
 * did (the message was of that form), 0 when it left it alone. */
int rl_error_name_owner(rl_error *err, const char *owner);

typedef enum rl_lost_reason {
    RL_LOST_NONE = 0,
    RL_LOST_EXPIRED,       /* the key expired before it could be renewed */
    RL_LOST_DELETED,       /* the key was deleted (force unlock, DEL, FLUSH, restart) */
    RL_LOST_OWNER_CHANGED, /* the key exists but no longer holds this owner */
    RL_LOST_UNREACHABLE,   /* Redis could not be reached before the confirmed lease ran out */
    RL_LOST_MAX_HOLD,      /* held longer than its max_hold: the watchdog stopped renewing it */
    RL_LOST_FAILOVER       /* its server changed (a failover, a restart) and lacks the hold */
} rl_lost_reason;
#define RL_LOST_REASON_COUNT 7 /* RL_LOST_NONE .. RL_LOST_FAILOVER */

const char *rl_lost_reason_name(rl_lost_reason reason);

typedef enum rl_event_kind {
    RL_EVENT_LOST = 1,         /* a hold was lost while held: name, context, reason */
    RL_EVENT_RENEW_FAILED = 2, /* a renewal round failed and will be retried: holds, message */
    RL_EVENT_RENEWED = 3,      /* a renewal round succeeded: holds renewed */
    RL_EVENT_SYNC_FAILED = 4,  /* sync_replicas: a release or renewal was not acknowledged by
                                  any connected replica in time: message */
    RL_EVENT_STRAY_HOLDS = 5,  /* Redis counted more holds of an owner than this client knew (an
                                  acquire whose answer was lost); its last release removed
                                  them: name, context, holds, message (a warning) */
    RL_EVENT_ABANDONED = 6,    /* a context ended while holding (rl_context_ended: a thread
                                  exited, a coroutine was collected); its hold was released:
                                  name, context, holds, message (a warning) */
    RL_EVENT_IN_DOUBT = 7,     /* a hold's renewal failed: it may still be valid until its
                                  deadline (rl_lock_state), but no longer surely: name, context,
                                  message (a warning). Followed by RL_EVENT_CONFIRMED or
                                  RL_EVENT_LOST */
    RL_EVENT_CONFIRMED = 8     /* a hold that was in doubt was confirmed by Redis again: name,
                                  context, message */
} rl_event_kind;

typedef struct rl_event {
    rl_event_kind kind;
    const char *name; /* the events of one hold only (lost, in doubt, confirmed, stray holds,
                         abandoned); valid during the callback */
    size_t name_len;
    uint64_t context;
    rl_lost_reason reason;
    size_t holds;
    const char *message; /* human-readable summary, valid during the callback */
} rl_event;

/* Called on the client's own event thread (never the watchdog thread, never a host thread), one
 * event at a time, in the order they happened. It may block without delaying renewals. It must not
 * free the client. */
typedef void (*rl_event_fn)(const rl_event *event, void *userdata);

typedef struct rl_options {
    int64_t connect_timeout_ms;  /* default 5000 */
    int64_t command_timeout_ms;  /* default 5000 */
    int64_t watchdog_timeout_ms; /* lease in watchdog mode, renewed every third; default 30000 */
    int64_t latch_ttl_ms;        /* lifetime of an unlock latch; default 20000 */
    int pool_size;               /* most command connections shared by host threads, opened as
                                    concurrent calls need them; default 16 */
    int64_t max_hold_ms;         /* watchdog mode: stop renewing a hold this long after it was
                                    first taken and report it lost (max_hold); 0 = no cap */
    int sync_replicas;           /* > 0: after each lock write, WAIT for this many replicas; an
                                    acquire no connected replica acknowledged is undone and fails
                                    with RL_ERR_REPLICA. 0 (default) = off */
    int sync_aof;                /* 1: after each lock write, WAITAOF until the server's
                                    append-only file has it on disk (and sync_replicas replicas
                                    theirs) within sync_timeout_ms; an acquire not on disk in time
                                    is undone and fails with RL_ERR_REPLICA. Needs WAITAOF (Redis
                                    7.2+, Valkey) and appendonly on: each connection checks when
                                    it opens, else RL_ERR_UNSUPPORTED. 0 (default) = off */
    int64_t sync_timeout_ms;     /* how long WAIT waits; default 1000; with sync_replicas it must
                                    be shorter than watchdog_timeout_ms (and fixed leases should
                                    be longer too: a hold waits for WAIT before it is renewed) */
    int64_t fair_wait_ms;        /* fair locks: how long a queued waiter that waits without a
                                    time limit keeps its place without coming back (a timed
                                    wait uses its own time limit); default 300000 */
    int64_t handover_grace_ms;   /* non-fair locks: after a release whose message woke a waiter,
                                    a waiting acquire of the same lock by this client leaves it
                                    to that waiter for up to this long (the releaser does not
                                    take it straight back); default 2, 0 = never (most hand-offs
                                    per second, least even between workers) */
    int64_t failover_grace_ms;   /* redis+sentinel://: after this client followed a new master, it
                                    grants no new hold for this long (an acquire waits, a try
                                    answers not acquired), so that a holder on the old master,
                                    whose lock the promoted replica may lack, is told first (its
                                    hold goes in doubt); default 1000, 0 = off */
    int64_t drift_factor_ppm;    /* a hold is guaranteed until its last confirmed acquire or
                                    renewal was sent + its lease - (lease x this / 10^6 + 2 ms),
                                    the margin for this host's and Redis's clocks drifting apart
                                    (rl_lock_state); default 10000 (1%), at most 500000 */
    rl_event_fn on_event;        /* optional */
    void *event_userdata;
    int queue_events; /* 1: no event thread; events wait for rl_client_take_events,
                         on the host's own thread (for hosts that are not thread
                         safe: Lua). on_event is then unused */
    /* TLS, for rediss:// URLs only (in builds with TLS). The server's certificate is verified
     * against the system's CAs (or these) and the name (the URL's host or tls_server_name).
     * The strings are copied; files are read when the client is made. */
    const char *tls_ca_file;      /* PEM bundle of trusted CAs; NULL: the system's */
    const char *tls_ca_dir;       /* a directory of hashed CA certificates */
    const char *tls_cert_file;    /* client certificate (mutual TLS), PEM; with tls_key_file */
    const char *tls_key_file;     /* its private key, PEM, unencrypted */
    const char *tls_server_name;  /* for SNI and verification; NULL: the URL's host */
    int tls_insecure_skip_verify; /* 1: accept any certificate and name. Encrypts, but protects
                                     nothing against a man in the middle: for tests only */
    /* Sentinel (redis+sentinel:// URLs): AUTH for the sentinels themselves (the URL's user and
     * password are the master's). Copied. */
    const char *sentinel_user;
    const char *sentinel_password;
    /* How this client's connections name themselves to Redis (CLIENT SETNAME, shown by CLIENT
     * LIST and by rl_inspect beside the client's holds): "redlease:<client id>:<this>". NULL
     * (default): "<host name>:<pid>". 1 to RL_CLIENT_NAME_MAX printable ASCII characters, no
     * spaces (as Redis allows in a client name). Copied. */
    const char *client_name;
} rl_options;

#define RL_CLIENT_NAME_MAX 64

void rl_options_init(rl_options *options);

/* ==== The options catalogue ===================================================================
 * One row per rl_options field a user sets by name (the callback fields excepted): its name as
 * users spell it, its kind, where it lives in rl_options, its default and its bounds. The
 * bindings read users' options by walking it (converting each value by its kind), rl_options_init
 * fills in the defaults from it, rl_client_new checks the bounds from it, and the OpenResty
 * backend's generator copies it. A new option is one row in csrc/core/options.c. */
typedef enum {
    RL_OPTION_MS,    /* int64_t milliseconds; users give seconds (rounded up) */
    RL_OPTION_COUNT, /* int, a whole number */
    RL_OPTION_PPM,   /* int64_t parts per million; users give a fraction */
    RL_OPTION_TEXT,  /* const char *, copied by rl_client_new; NULL: none */
    RL_OPTION_PATH, /* as TEXT: the name of a file or directory (a binding may take path objects) */
    RL_OPTION_FLAG, /* int, 0 or 1 */
} rl_option_kind;

#define RL_OPTION_NO_MAX INT64_MAX /* max of a number without an upper bound */

enum {
    RL_OPTION_ZERO_NONE = 1, /* 0 (the default) means none: users give a value > 0 or nothing */
    RL_OPTION_INTERNAL = 2,  /* set from C only (tests, benchmarks): the bindings do not offer it */
};

typedef struct rl_option_info {
    const char *name; /* "watchdog_timeout": the field's name without its unit */
    rl_option_kind kind;
    size_t offset;    /* of the field in rl_options */
    int64_t def;      /* numbers: the default, in the field's unit (ms, ppm, ...) */
    int64_t min, max; /* numbers: the bounds rl_client_new holds the value to */
    int flags;        /* RL_OPTION_ZERO_NONE, RL_OPTION_INTERNAL */
} rl_option_info;

/* Row `index`, from 0; NULL past the last. */
const rl_option_info *rl_option_at(int index);
/* The row named `name` (len bytes), or NULL. */
const rl_option_info *rl_option_find(const char *name, size_t len);
/* "ms", "count", "ppm", "text", "path" or "flag": a kind as the Lua side names it. */
const char *rl_option_kind_name(rl_option_kind kind);
/* What a number of `option` must be, as rl_client_new says it ("must be from 0 to 1000 ms"),
 * written to buf as snprintf does; "" for strings and flags. */
int rl_option_bounds(const rl_option_info *option, char *buf, size_t size);
/* A number or flag option's field in `options`, widened to 64 bits; and setting it (an int field
 * takes the value clamped to int's range). */
int64_t rl_option_get(const rl_options *options, const rl_option_info *option);
void rl_option_set(rl_options *options, const rl_option_info *option, int64_t value);
/* Sets a TEXT or PATH option's field (the string is copied by rl_client_new, not here). */
void rl_option_set_text(rl_options *options, const rl_option_info *option, const char *value);

typedef struct rl_client rl_client;

/* url: redis://[user[:password]@]host[:port][/db], unix://[user[:password]@]/path[?db=N],
 * rediss://[user[:password]@]host[:port][/db] (TLS, verified; only in builds with TLS, else
 * RL_ERR_UNSUPPORTED), redis+sentinel://[user[:password]@]host1:port1[,host2:port2...]/<master
 * name>[/db] (the master the sentinels name, followed across failovers; rediss+sentinel:// with
 * TLS), redis+cluster://[user[:password]@]host1:port1[,host2:port2...] (a Redis Cluster from its
 * seed nodes: each lock at the node serving its slot; rediss+cluster:// with TLS). Connects
 * nothing yet: connections open on first use. */
rl_status rl_client_new(const char *url, const rl_options *options, rl_client **out, rl_error *err);

/* 1 when this build speaks TLS (rediss://). */
int rl_tls_supported(void);

/* Stops the client's threads, closes its connections and drops the caller's reference. Holds are
 * not released (they expire by their lease). Locks made from the client keep its memory alive
 * until they are freed; using them afterwards answers RL_ERR_CLOSED. */
void rl_client_free(rl_client *client);

/* Tells every client that `context` ended (a thread exited, a coroutine was collected) while it
 * may still hold locks: their renewal stops, each is released in Redis if it is still this
 * owner's, and each is reported as an RL_EVENT_ABANDONED event. Waits for those releases' round
 * trips; a binding calls it from a thread-exit destructor or a finalizer. */
void rl_context_ended(uint64_t context);

/* The options the client runs with (the defaults filled in). */
void rl_client_options(rl_client *client, rl_options *out);

/* The URL the client was made with, its password (if any) replaced by "***": safe to show. */
const char *rl_client_url(rl_client *client);

/* The client's UUID (36 chars). A forked child gets a new one on its first call. */
const char *rl_client_id(rl_client *client);

/* A client made with queue_events: delivers the events waiting, oldest first, to fn on the
 * calling thread (fn must not free the client); returns how many. 0 otherwise. */
size_t rl_client_take_events(rl_client *client, rl_event_fn fn, void *userdata);

typedef struct rl_stats {
    uint64_t renew_rounds;        /* renewal rounds that reached Redis */
    uint64_t renew_round_trips;   /* network round trips spent on renewal */
    uint64_t renew_calls;         /* script calls spent on renewal */
    uint64_t renewed_holds;       /* (key, owner) pairs renewed */
    size_t last_round_holds;      /* holds in the most recent round */
    uint64_t renew_failed_rounds; /* rounds that failed on the network (and were retried) */
    uint64_t renew_round_us;      /* wall time of the rounds that reached Redis, in total */
    uint64_t renew_round_cpu_us;  /* the watchdog thread's CPU time in those rounds, in total */
    uint64_t last_round_us;       /* the most recent such round: wall time, CPU time, and the */
    uint64_t last_round_cpu_us;   /* time spent waiting for Redis */
    uint64_t last_round_net_us;
    int watchdog_running;
    size_t subscriptions; /* channels the subscriber connection is subscribed to */
    /* What an operator watches (csrc/core/metrics.c): */
    uint64_t acquisitions;               /* acquires that took a hold (re-entries included) */
    uint64_t waits;                      /* acquires that found the lock held and waited */
    uint64_t wait_total_us;              /* time spent in those waits, in total */
    uint64_t wait_max_us;                /* the longest of them */
    uint64_t lost[RL_LOST_REASON_COUNT]; /* holds lost while held, by rl_lost_reason */
    uint64_t lost_total;
    size_t holds;               /* (lock, context) holds this client has now */
    size_t in_doubt;            /* of these, holds in doubt now (a renewal failed) */
    uint64_t in_doubt_total;    /* times a hold went in doubt */
    size_t waiters;             /* acquires waiting now */
    size_t last_round_nodes;    /* servers the most recent round went to (a cluster's nodes) */
    uint64_t cluster_refreshes; /* redis+cluster://: slot maps fetched so far */
    uint64_t server_changes;    /* holds the watchdog found on another server than the one that
                                   renewed them before (a failover, a restart): each verified */
    /* sync_replicas > 0: lock writes followed by a WAIT, the replicas' acknowledgements of them
     * in total, and writes that stood without one (no replica was listed: none waited for). */
    uint64_t sync_waits, sync_acks, sync_skipped;
    /* acquires the subscriber thread sent for a waiter its release message woke, the waiter
     * reading the answer (a hand-off without a thread wake-up before the acquire) */
    uint64_t woken_acquires;
    uint64_t master_changes; /* redis+sentinel://: new masters this client followed */
} rl_stats;

void rl_client_stats(rl_client *client, rl_stats *out);

typedef struct rl_lock rl_lock;

/* The lock kinds of Redisson, stored in its format (docs/protocol.md). */
typedef enum rl_lock_kind {
    RL_LOCK_REENTRANT = 0, /* RLock */
    RL_LOCK_FENCED,        /* RFencedLock: every acquire also yields a fencing token */
    RL_LOCK_FAIR,          /* RFairLock: waiters acquire in arrival order */
    RL_LOCK_READ,          /* RReadWriteLock, read side: shared with other readers */
    RL_LOCK_WRITE          /* RReadWriteLock, write side: exclusive; its holder may also read */
} rl_lock_kind;

/* A Redisson RLock on `name` (any bytes, at least one). */
rl_status rl_lock_new(rl_client *client, const void *name, size_t name_len, rl_lock **out,
                      rl_error *err);
/* A lock of any kind on `name`. The read and write sides of one read/write lock are two locks
 * made with the same name. */
rl_status rl_lock_new_kind(rl_client *client, rl_lock_kind kind, const void *name, size_t name_len,
                           rl_lock **out, rl_error *err);
rl_lock_kind rl_lock_kind_of(const rl_lock *lock);
void rl_lock_free(rl_lock *lock);

#define RL_LEASE_WATCHDOG (-1) /* lease_ms: hold with the watchdog timeout and keep renewing */
#define RL_MAX_LEASE_MS (((int64_t)1) << 40) /* longest lease or watchdog timeout (~34 years) */
#define RL_WAIT_FOREVER (-1)                 /* wait_ms: wait until acquired */

/* Called between wait slices of about 50 ms; a non-zero return aborts the wait (RL_ABORTED). */
typedef int (*rl_wait_hook)(void *userdata);

/* Acquires one hold for `context`. lease_ms > 0: fixed lease, not renewed; RL_LEASE_WATCHDOG:
 * renewed by the watchdog until released. wait_ms: 0 = one try, < 0 = forever, else the longest
 * wait. Returns RL_OK, RL_NOT_ACQUIRED, RL_ABORTED, RL_LOST (this context's earlier hold of the
 * lock was lost and not yet released) or an error. */
rl_status rl_lock_acquire(rl_lock *lock, uint64_t context, int64_t lease_ms, int64_t wait_ms,
                          rl_wait_hook hook, void *hook_userdata, rl_error *err);

/* Everything an acquire can be told; rl_acquire_options_init gives rl_lock_acquire's defaults. */
typedef struct rl_acquire_options {
    int64_t lease_ms;    /* RL_LEASE_WATCHDOG (default) or a fixed lease > 0 */
    int64_t wait_ms;     /* 0 = one try, RL_WAIT_FOREVER (default), else the longest wait */
    int64_t max_hold_ms; /* watchdog mode cap for this hold: 0 = the client's max_hold_ms (default),
                            RL_MAX_HOLD_NONE = no cap, else ms from the first hold */
    rl_wait_hook hook;   /* optional, see rl_wait_hook */
    void *hook_userdata;
} rl_acquire_options;

#define RL_MAX_HOLD_NONE (-1)

void rl_acquire_options_init(rl_acquire_options *options);
rl_status rl_lock_acquire_with(rl_lock *lock, uint64_t context, const rl_acquire_options *options,
                               rl_error *err);

/* Releases one hold of `context`. RL_OK; RL_NOT_OWNED when it holds none; RL_LOST when the hold
 * was lost (the hold is dropped all the same). When the call fails on the network (or Redis
 * answers an error), renewal stops at once, err->hold_kept is set, and calling release again
 * retries the same release (idempotent via the unlock latch); after any other answer the hold is
 * gone. */
rl_status rl_lock_release(rl_lock *lock, uint64_t context, rl_error *err);

/* Deletes the lock whoever holds it and wakes a waiter. *deleted = 1 if it was held. A fenced
 * lock's fence (its token counter) advances too, held or not: the evicted holder's token is
 * stale from then on (docs/protocol.md). */
rl_status rl_lock_force_unlock(rl_lock *lock, int *deleted, rl_error *err);

/* Server-side queries (one round trip each), through one entry point or one function each. */
typedef enum rl_query {
    RL_QUERY_LOCKED = 1, /* 1 when anyone holds it (each side of a read/write lock: in its mode) */
    RL_QUERY_HELD = 2,   /* 1 when `context` holds it, as Redis sees it */
    RL_QUERY_HOLD_COUNT = 3, /* the context's holds, as Redis counts them */
    RL_QUERY_REMAINING = 4 /* lease left in ms; -2 when not locked, -1 when the key has no expiry */
} rl_query;
rl_status rl_lock_query(rl_lock *lock, rl_query what, uint64_t context, int64_t *out,
                        rl_error *err);
rl_status rl_lock_is_locked(rl_lock *lock, int *locked, rl_error *err);
rl_status rl_lock_is_held(rl_lock *lock, uint64_t context, int *held, rl_error *err);
rl_status rl_lock_hold_count(rl_lock *lock, uint64_t context, int64_t *count, rl_error *err);
/* Lease left in ms; -2 when not locked, -1 when the key has no expiry. */
rl_status rl_lock_remaining(rl_lock *lock, int64_t *pttl_ms, rl_error *err);

/* Local state, no round trip: the context's hold count as this client knows it, and whether that
 * hold was lost (reason in *reason when non-NULL). */
int64_t rl_lock_local_holds(rl_lock *lock, uint64_t context);
int rl_lock_lost(rl_lock *lock, uint64_t context, rl_lost_reason *reason);

/* The context's hold as this client sees it, no round trip:
 * - RL_HOLD_HELD: guaranteed until *valid_until_ms, a CLOCK_MONOTONIC time in ms (Python's
 *   time.monotonic() x 1000): the moment its last confirmed acquire or renewal was sent + the
 *   lease - the drift margin (drift_factor_ppm). No other owner can hold the lock before then
 *   while Redis keeps its data (a failover to a replica that lacks the hold can break this).
 * - RL_HOLD_IN_DOUBT: a renewal failed, or is half a renewal period late, or less than the drift
 *   margin is left: *valid_until_ms still says until when it is guaranteed (0 when no longer),
 *   but the holder should stop starting work that needs the lock.
 * - RL_HOLD_LOST: lost (rl_lock_lost tells why), or its lease ran out; RL_HOLD_NONE: not held.
 * *valid_until_ms is 0 unless guaranteed now. */
typedef enum rl_hold_state {
    RL_HOLD_NONE = 0,
    RL_HOLD_HELD = 1,
    RL_HOLD_IN_DOUBT = 2,
    RL_HOLD_LOST = 3
} rl_hold_state;
rl_hold_state rl_lock_state(rl_lock *lock, uint64_t context, int64_t *valid_until_ms);
/* A guard for a critical write, no round trip: RL_OK when the context's hold is held and
 * guaranteed for at least min_left_ms more (*valid_for_ms: how long); RL_IN_DOUBT when it is in
 * doubt or less is left; RL_LOST when it was lost or its lease ran out; RL_NOT_OWNED when the
 * context does not hold it. */
rl_status rl_lock_check(rl_lock *lock, uint64_t context, int64_t min_left_ms, int64_t *valid_for_ms,
                        rl_error *err);
/* rl_lock_state's *valid_until_ms alone: 0 when nothing is guaranteed. */
int64_t rl_lock_valid_until(rl_lock *lock, uint64_t context);
/* The clock of those times: CLOCK_MONOTONIC in ms. */
int64_t rl_monotonic_ms(void);

/* Fenced locks: the fencing token of the context's latest acquire while it holds the lock (every
 * acquire, reentrant ones too, gets a greater one); 0 when it holds none or the lock is not
 * fenced. Storage that is written under the lock keeps the greatest token it saw and refuses
 * writes that carry a smaller one. */
int64_t rl_lock_token(rl_lock *lock, uint64_t context);

/* Fencing checked by Redis-stored data (docs/semantics.md): SET `key` to `value` only when
 * `token` (1 to 2^53) is at least the greatest token written to it before, which is kept beside
 * it in prefix("redlease_fence", key) (no TTL; same slot). *written: 1 written, 0 refused (a
 * stale holder's token); *fence: the greatest token before this call, 0 none (either may be
 * NULL). RL_ERR_SERVER when that fence key holds something else. */
rl_status rl_fenced_set(rl_client *client, const void *key, size_t key_len, const void *value,
                        size_t value_len, int64_t token, int *written, int64_t *fence,
                        rl_error *err);
/* Cleanup of a fenced lock's token counter prefix("redisson_lock_token", name), which lives for
 * ever: deletes it unless the lock is held. *dropped: its last value (0: there was none), -1 when
 * the lock is held (nothing deleted). The next acquire's token starts again at 1: only for names
 * whose storage no longer keeps a fence (docs/protocol.md). */
rl_status rl_fence_drop(rl_client *client, const void *name, size_t name_len, int64_t *dropped,
                        rl_error *err);

const char *rl_lock_name(const rl_lock *lock, size_t *len);

/* ==== Async calls (for event loops: asyncio, green threads) ====================================
 * The same lock calls, started without blocking the caller: each runs its network steps on a
 * small pool of the client's worker threads and reports through `done`, called once, on a worker
 * thread (or in the starting call when it fails at once), with the call's status, its integer
 * answer (query: the value; force unlock: deleted) and the error. A waiting acquire costs no
 * thread: it is woken by the client's subscriber (or a timer at its deadline). The lock must
 * outlive the call until `done` ran; `done` must not free the client. */
typedef struct rl_call rl_call;
typedef void (*rl_done_fn)(rl_call *call, rl_status status, int64_t value, const rl_error *err,
                           void *userdata);

/* A fresh owner context id, never handed out before in this process (the bindings' per-thread
 * ids come from the same counter), e.g. one per asyncio task. */
uint64_t rl_context_new(void);
/* rl_context_ended for one client, without waiting: the releases run on its workers. */
void rl_client_context_ended_later(rl_client *client, uint64_t context);

/* Start a call; *out (on RL_OK) is the caller's reference, given back with rl_call_free. A call
 * that cannot start answers its error here and `done` is not called. */
rl_status rl_lock_acquire_async(rl_lock *lock, uint64_t context, const rl_acquire_options *options,
                                rl_done_fn done, void *userdata, rl_call **out, rl_error *err);
rl_status rl_lock_release_async(rl_lock *lock, uint64_t context, rl_done_fn done, void *userdata,
                                rl_call **out, rl_error *err);
rl_status rl_lock_query_async(rl_lock *lock, rl_query what, uint64_t context, rl_done_fn done,
                              void *userdata, rl_call **out, rl_error *err);
rl_status rl_lock_force_unlock_async(rl_lock *lock, rl_done_fn done, void *userdata, rl_call **out,
                                     rl_error *err);
/* rl_inspect of the lock's name (its owners, for lock.owner()), on the workers; once `done` is
 * called with RL_OK, rl_call_inspection gives the answer. */
rl_status rl_lock_inspect_async(rl_lock *lock, rl_done_fn done, void *userdata, rl_call **out,
                                rl_error *err);
struct rl_inspection;
/* An ended inspect call's answer, handed over once (free it with rl_inspection_free); NULL for
 * any other call, one not ended or failed, or when taken already. */
struct rl_inspection *rl_call_inspection(rl_call *call);
/* Cancels an acquire (other calls run to their end): a waiting one stops waiting and leaves its
 * subscription (and a fair lock's queue); one whose round trip is in flight releases the hold
 * if Redis granted it. `done` then reports RL_ABORTED (or the outcome, if it ended first). */
void rl_call_cancel(rl_call *call);
/* Gives back the caller's reference; a call not done yet is cancelled and ends by itself. */
void rl_call_free(rl_call *call);

/* Any other call of the client (a semaphore's release, a latch's count down, ...) run on its
 * workers: fn(arg, &value, err) once, its status and value reported to `done`. `arg` must live
 * until `done` ran. Cancelling does not stop it. */
typedef rl_status (*rl_async_fn)(void *arg, int64_t *value, rl_error *err);
rl_status rl_client_run_async(rl_client *client, rl_async_fn fn, void *arg, rl_done_fn done,
                              void *userdata, rl_call **out, rl_error *err);

/* The Redis scripts of the lock protocol (docs/protocol.md), for tools that must send exactly the
 * same texts (the OpenResty backend's generator, benchmarks): the name ("acquire", "release",
 * ...) and the text of script `index`, from 0; NULL past the last. */
const char *rl_script_name(int index);
const char *rl_script_source(int index);

/* ==== The rest of Redisson's lock family ======================================================
 * Semaphores (RSemaphore), permit-expirable semaphores (RPermitExpirableSemaphore), count-down
 * latches (RCountDownLatch), each stored in its Redisson counterpart's layout (docs/protocol.md)
 * so that Redisson and redlease share them; and multi-locks (RedissonMultiLock's rules) and
 * RedLock over rl_lock objects. Waits take wait_ms as lock acquires do (0: one try,
 * RL_WAIT_FOREVER, else the longest wait) and a hook; a wait that runs out answers
 * RL_NOT_ACQUIRED. Names are any bytes, at least one. Counts are int64; Redis keeps them as
 * decimal strings. */

/* ---- semaphore (RSemaphore): a count of permits in Redis, shared by every client ---------- */

typedef struct rl_semaphore rl_semaphore;

rl_status rl_semaphore_new(rl_client *client, const void *name, size_t name_len, rl_semaphore **out,
                           rl_error *err);
void rl_semaphore_free(rl_semaphore *sem);
const char *rl_semaphore_name(const rl_semaphore *sem, size_t *len);

/* Sets the number of permits (>= 0) when the semaphore does not exist yet: *set = 1 when this
 * call set it, 0 when it existed (its count is left alone). */
rl_status rl_semaphore_try_set_permits(rl_semaphore *sem, int64_t permits, int *set, rl_error *err);
/* Adds `delta` permits (a negative delta takes some away): the total changes. Creates the
 * semaphore from 0 when it does not exist. */
rl_status rl_semaphore_add_permits(rl_semaphore *sem, int64_t delta, rl_error *err);
/* Takes `permits` (>= 0; 0 takes nothing and succeeds) at once, all or none, waiting up to wait_ms
 * for them; waiters are woken by the releases' messages. The permits count as this client's
 * until it releases them. */
rl_status rl_semaphore_acquire(rl_semaphore *sem, int64_t permits, int64_t wait_ms,
                               rl_wait_hook hook, void *hook_userdata, rl_error *err);
/* Gives back `permits` (>= 0) that this client acquired (any of its threads): RL_NOT_OWNED when
 * it holds fewer. To give permits the client did not take, use add_permits. A release that fails
 * on the network is not retried: its permits count as given back. */
rl_status rl_semaphore_release(rl_semaphore *sem, int64_t permits, rl_error *err);
/* The permits free now (0 when the semaphore does not exist). One round trip. */
rl_status rl_semaphore_available(rl_semaphore *sem, int64_t *permits, rl_error *err);
/* Takes every free permit at once; *drained = how many (they count as this client's). */
rl_status rl_semaphore_drain(rl_semaphore *sem, int64_t *drained, rl_error *err);
/* Local, no round trip: the permits of this semaphore this client holds. */
int64_t rl_semaphore_held(rl_semaphore *sem);
/* rl_semaphore_acquire as an async call (see "Async calls"): no thread waits, the releases'
 * messages wake it. Cancelled (rl_call_cancel), it reports RL_ABORTED and leaves no permit
 * taken: permits a try got meanwhile are given back. */
rl_status rl_semaphore_acquire_async(rl_semaphore *sem, int64_t permits, int64_t wait_ms,
                                     rl_done_fn done, void *userdata, rl_call **out, rl_error *err);

/* ---- permit-expirable semaphore (RPermitExpirableSemaphore) ------------------------------- */

/* Each permit taken has an id and a lease: a permit not released in time comes back by itself,
 * so a crashed worker's permit is not lost. redlease's own addition: a permit acquired with
 * RL_LEASE_WATCHDOG is renewed by the client's watchdog, in the same rounds as its locks, until
 * released (opt-in; Redisson has no such renewal). */
typedef struct rl_expirable rl_expirable;

#define RL_PERMIT_ID_LEN 32 /* a permit id: 32 lowercase hex chars (16 random bytes in Redis) */

rl_status rl_expirable_new(rl_client *client, const void *name, size_t name_len, rl_expirable **out,
                           rl_error *err);
void rl_expirable_free(rl_expirable *sem);
const char *rl_expirable_name(const rl_expirable *sem, size_t *len);

rl_status rl_expirable_try_set_permits(rl_expirable *sem, int64_t permits, int *set, rl_error *err);
rl_status rl_expirable_add_permits(rl_expirable *sem, int64_t delta, rl_error *err);
/* Takes one permit, waiting up to wait_ms (also woken when a held permit's lease ends). lease_ms:
 * > 0, the permit comes back by itself after that long unless released or its lease updated;
 * RL_LEASE_WATCHDOG, the lease is the watchdog timeout, renewed until released. On RL_OK, id
 * holds the permit's id (RL_PERMIT_ID_LEN chars and a NUL). */
rl_status rl_expirable_acquire(rl_expirable *sem, int64_t lease_ms, int64_t wait_ms,
                               rl_wait_hook hook, void *hook_userdata,
                               char id[RL_PERMIT_ID_LEN + 1], rl_error *err);
/* Gives a permit back. RL_NOT_OWNED: no such permit is held (never acquired, already released,
 * or expired and taken back by another acquire); RL_LOST: it had expired (it is back in the pool
 * now, and someone may have used it meanwhile), or the watchdog had found it lost;
 * RL_ERR_ARGUMENT: not a permit id. A renewed permit's renewal stops first, whatever the answer:
 * when the call fails on the network, the permit expires by its lease. */
rl_status rl_expirable_release(rl_expirable *sem, const char *id, rl_error *err);
/* Sets a held permit's lease to lease_ms (> 0) from now; a permit renewed by the watchdog stops
 * being renewed. RL_NOT_OWNED when no such permit is held. */
rl_status rl_expirable_update_lease(rl_expirable *sem, const char *id, int64_t lease_ms,
                                    rl_error *err);
/* The permits free now, expired ones counted back in. */
rl_status rl_expirable_available(rl_expirable *sem, int64_t *permits, rl_error *err);
/* Local, no round trip: whether a permit this client renews was lost while held (it expired
 * before a renewal, or was released or deleted by someone else). */
int rl_expirable_lost(rl_expirable *sem, const char *id, rl_lost_reason *reason);
/* rl_expirable_acquire as an async call: on RL_OK `id` (which must live until `done` ran) holds
 * the permit's id. Cancelled, it reports RL_ABORTED and a permit it got meanwhile is released. */
rl_status rl_expirable_acquire_async(rl_expirable *sem, int64_t lease_ms, int64_t wait_ms,
                                     char id[RL_PERMIT_ID_LEN + 1], rl_done_fn done, void *userdata,
                                     rl_call **out, rl_error *err);

/* ---- count-down latch (RCountDownLatch) --------------------------------------------------- */

typedef struct rl_countdown rl_countdown;

rl_status rl_countdown_new(rl_client *client, const void *name, size_t name_len, rl_countdown **out,
                           rl_error *err);
void rl_countdown_free(rl_countdown *latch);
const char *rl_countdown_name(const rl_countdown *latch, size_t *len);

/* Sets the count (>= 1) when the latch does not exist: *set = 1 when this call set it. A latch
 * exists from try_set_count until its count reaches 0, when it is deleted. */
rl_status rl_countdown_try_set_count(rl_countdown *latch, int64_t count, int *set, rl_error *err);
/* Counts down by one; at 0 the latch is deleted and every waiter wakes. No-op when it does not
 * exist. */
rl_status rl_countdown_count_down(rl_countdown *latch, rl_error *err);
/* The count now (0 when the latch does not exist). */
rl_status rl_countdown_count(rl_countdown *latch, int64_t *count, rl_error *err);
/* Waits until the count is 0 (RL_OK; at once when the latch does not exist). */
rl_status rl_countdown_wait(rl_countdown *latch, int64_t wait_ms, rl_wait_hook hook,
                            void *hook_userdata, rl_error *err);
/* rl_countdown_wait as an async call (woken by the latch's messages; cancelled: RL_ABORTED). */
rl_status rl_countdown_wait_async(rl_countdown *latch, int64_t wait_ms, rl_done_fn done,
                                  void *userdata, rl_call **out, rl_error *err);
/* Deletes the latch whatever its count; *deleted = 1 when it existed. redlease's waiters then
 * find a count of 0 and return (Redisson's keep waiting for a "0" message). */
rl_status rl_countdown_delete(rl_countdown *latch, int *deleted, rl_error *err);

/* ---- multi-lock and RedLock --------------------------------------------------------------- */

/* Several locks (any kinds, any clients) taken as one, all or none, with RedissonMultiLock's
 * rules: one wait covers them all; a lock that cannot be had releases the ones taken and starts
 * over; a fixed lease is taken as twice the wait while they are gathered, then set on each. A
 * RedLock (rl_redlock_new) is the same over locks of independent Redis servers (one client
 * each), held when a majority of them is taken within the lease's validity. The locks are not
 * owned: they must outlive the multi-lock. */
typedef struct rl_multilock rl_multilock;

rl_status rl_multilock_new(rl_lock *const *locks, size_t n, rl_multilock **out, rl_error *err);
rl_status rl_redlock_new(rl_lock *const *locks, size_t n, rl_multilock **out, rl_error *err);
void rl_multilock_free(rl_multilock *multi);

/* Takes every lock (RedLock: a majority) for `context`: options as rl_lock_acquire_with (wait,
 * lease, max_hold, hook). RL_OK; RL_NOT_ACQUIRED; RL_ABORTED; a multi-lock answers a member's
 * failure (RL_ERR_CONNECTION, RL_LOST, ...) as it is, after releasing the ones taken; a RedLock
 * counts a member that failed as not taken. */
rl_status rl_multilock_acquire(rl_multilock *multi, uint64_t context,
                               const rl_acquire_options *options, rl_error *err);
/* rl_multilock_acquire as an async call (see "Async calls"): each member is taken with an async
 * acquire (no thread waits), pauses run on a timer. Cancelled, it reports RL_ABORTED and every
 * lock it took is released. The locks' clients must outlive the call. */
rl_status rl_multilock_acquire_async(rl_multilock *multi, uint64_t context,
                                     const rl_acquire_options *options, rl_done_fn done,
                                     void *userdata, rl_call **out, rl_error *err);
/* rl_multilock_release as an async call (run on the first lock's client's workers). */
rl_status rl_multilock_release_async(rl_multilock *multi, uint64_t context, rl_done_fn done,
                                     void *userdata, rl_call **out, rl_error *err);
/* Releases every lock of the multi-lock that `context` holds (RedLock: on every server). The
 * first failure is answered once all were tried; RL_NOT_OWNED when it held none. */
rl_status rl_multilock_release(rl_multilock *multi, uint64_t context, rl_error *err);
/* Local, no round trip: how many of its locks `context` holds. */
size_t rl_multilock_held(rl_multilock *multi, uint64_t context);

/* ==== Operating redlease: fixed-lease extension, hand-off, inspection, scanning ============== */

/* Fixed-lease holds (redis-py's Lock.extend / reacquire): set the lease of `context`'s hold in
 * Redis, where this owner still holds it. extend: the lease left plus add_ms (replace = 0) or
 * add_ms from now (replace = 1); reacquire: the hold's own fixed lease from now. RL_NOT_OWNED
 * when it holds none; RL_ERR_ARGUMENT for a hold in watchdog mode (the watchdog extends it);
 * RL_LOST when Redis no longer has it (the hold is then lost, as a renewal would find). */
rl_status rl_lock_extend(rl_lock *lock, uint64_t context, int64_t add_ms, int replace,
                         rl_error *err);
rl_status rl_lock_reacquire(rl_lock *lock, uint64_t context, rl_error *err);

/* Hand-off (redis-py's token=): the holder turns its hold into a token and lets go of it
 * locally (no renewal, its release answers RL_NOT_OWNED); the lock keeps its lease in Redis.
 * Any thread or process then releases it with rl_lock_release_token on a lock of the same name
 * and kind: every hold of the token's owner goes. RL_NOT_OWNED when that owner holds none (a
 * forged token, or one already used or released); RL_ERR_ARGUMENT when it is not a token. */
#define RL_TOKEN_MAX 64
rl_status rl_lock_hand_off(rl_lock *lock, uint64_t context, char token[RL_TOKEN_MAX],
                           rl_error *err);
rl_status rl_lock_release_token(rl_lock *lock, const char *token, rl_error *err);

/* What a key holds, decoded from Redisson's layouts (docs/operations.md). */
typedef enum rl_key_kind {
    RL_KEY_NONE = 0,  /* no such key (and no fair queue) */
    RL_KEY_REENTRANT, /* a lock hash: RLock (or an idle fair lock, indistinguishable) */
    RL_KEY_FENCED,    /* a lock hash with a fencing token counter */
    RL_KEY_FAIR,      /* a lock hash, or none, with a fair wait queue */
    RL_KEY_RW,        /* a read/write lock hash (field "mode") */
    RL_KEY_COUNTER,   /* a semaphore or count-down latch: an integer string */
    RL_KEY_OTHER      /* anything else: not lock-shaped */
} rl_key_kind;
const char *rl_key_kind_name(rl_key_kind kind); /* "none", "reentrant", ..., "counter", "other" */

/* An owner field decoded: "<client id>:<context>[:write]". */
typedef struct rl_owner_info {
    char field[RL_TOKEN_MAX]; /* as stored (cut to fit) */
    char client_id[40];       /* the 36-char UUID, or "" when the field is not UUID-shaped */
    char context[RL_TOKEN_MAX];
    int write;        /* the writer of a read/write lock */
    int64_t count;    /* its holds */
    int64_t lease_ms; /* a reader: its longest hold key's lease; else the lock's; -1 no expiry */
    int local;        /* a client of this process holds it (the hold table knows it) */
    char name[RL_CLIENT_NAME_MAX + 16]; /* the holder's client_name (else "<host>:<pid>") as a
                                           connection of its client tells the lock's server;
                                           "" when none does (gone, unnamed, or Redisson) */
} rl_owner_info;

typedef struct rl_waiter_info {
    char owner[RL_TOKEN_MAX];
    char client_id[40];
    char context[RL_TOKEN_MAX];
    int64_t timeout_ms;                 /* how long its queued place lasts from now */
    char name[RL_CLIENT_NAME_MAX + 16]; /* as rl_owner_info's */
} rl_waiter_info;

typedef struct rl_inspection {
    rl_key_kind kind;
    char type[16];       /* the key's Redis TYPE ("hash", "string", "none", ...) */
    char mode[8];        /* read/write locks: "read" or "write" */
    int64_t lease_ms;    /* PTTL: -2 no key, -1 no expiry */
    int64_t count;       /* counters: the value */
    int64_t last_token;  /* fenced: the last token handed out; 0 none */
    int64_t subscribers; /* connections subscribed to the kind's unlock channel(s) */
    size_t n_owners;
    rl_owner_info *owners;
    size_t n_queue; /* fair: the wait queue in order */
    rl_waiter_info *queue;
} rl_inspection;

/* Reads everything about `name` (two round trips, read-only; a third, CLIENT LIST at the key's
 * server, for the names of its owners' and waiters' clients). RL_OK with *out (free it with
 * rl_inspection_free) whatever the key is: kind RL_KEY_NONE when there is nothing. */
rl_status rl_inspect(rl_client *client, const void *name, size_t name_len, rl_inspection **out,
                     rl_error *err);
void rl_inspection_free(rl_inspection *inspection);

/* One SCAN step for lock-shaped keys (hashes whose fields are owners): `cursor` 0 starts,
 * *next 0 when done. count: SCAN's COUNT hint (1..10000), bounding the work of each step;
 * pattern: MATCH (NULL: every key). Never KEYS. Names are NUL-terminated copies. */
typedef struct rl_scan_page {
    uint64_t next;
    size_t n;
    char **names;
    size_t *lens;
    size_t looked_at; /* hash keys this step read */
} rl_scan_page;
rl_status rl_scan_locks(rl_client *client, uint64_t cursor, const char *pattern, size_t count,
                        rl_scan_page **out, rl_error *err);
void rl_scan_page_free(rl_scan_page *page);

/* Waits until `name` changes (a keyspace notification) or until timeout_ms passed. *notified:
 * 1 when the server sends keyspace events for it (notify-keyspace-events allows them); 0 when
 * it does not, and the call just slept (the caller polls). RL_OK either way. timeout_ms 0: only
 * answers *notified, subscribing to nothing. */
rl_status rl_watch_wait(rl_client *client, const void *name, size_t name_len, int64_t timeout_ms,
                        rl_wait_hook hook, void *hook_userdata, int *notified, rl_error *err);

#ifdef __cplusplus
}
#endif
#endif
