/* What the lock family beyond locks shares (semaphore.c, expirable.c, countdown.c): an object on
 * one name of one client with its keys, its script calls, and the wait for a pub/sub message. */
#ifndef RL_FAMILY_H
#define RL_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "kind.h"
#include "names.h"

typedef struct rl_named {
    rl_client *client;
    const char *what; /* "semaphore", ... for messages */
    char *name;
    size_t name_len;
    char *channel; /* where its waiters listen */
    size_t channel_len;
    char *aux; /* a second key (the permit-expirable semaphore's timeout ZSET), else NULL */
    size_t aux_len;
} rl_named;

/* Checks the name, copies it and takes a reference on the client; the caller makes the channel
 * (and aux) next, and calls rl_named_destroy on any failure. */
rl_status rl_named_init(rl_named *o, rl_client *client, const char *what, const void *name,
                        size_t name_len, rl_error *err);
void rl_named_destroy(rl_named *o);

/* For messages: the name, cut short and printable (out: RL_NAME_SHOWN_MAX bytes). */
const char *rl_named_shown(const rl_named *o, char *out);

/* EVALSHA of script `id` with `nkeys` keys among args, on a pooled connection (as rl_kind_run).
 * `wrote` says which answers are writes, for replica sync (NULL: none). */
rl_status rl_named_run(const rl_named *o, rl_script_id id, int nkeys, const rl_arg *args, int nargs,
                       int idempotent, rl_reply_test wrote, redisReply **reply, rl_error *err);
/* A write whose replica sync failed is done on the master all the same: it is reported as an
 * RL_EVENT_SYNC_FAILED event and RL_OK is answered. */
rl_status rl_named_write(const rl_named *o, rl_script_id id, int nkeys, const rl_arg *args,
                         int nargs, redisReply **reply, rl_error *err);

/* Counts of permits the scripts take: from `min` to 2^53 (exact in the scripts' Lua numbers). */
#define RL_MAX_PERMITS (((int64_t)1) << 53)
rl_status rl_check_permits(int64_t n, int64_t min, const char *what, rl_error *err);
/* A semaphore's counting script `id` (try-set, add, release) with KEYS (name, channel) and ARGV
 * (n, the publish command), as rl_named_write. */
rl_status rl_named_count_write(const rl_named *o, rl_script_id id, int64_t n, redisReply **reply,
                               rl_error *err);
/* try_set_permits (*set: the script answered 1; may be NULL) and add_permits of either semaphore,
 * with the client entered. */
rl_status rl_named_set_permits(const rl_named *o, rl_script_id id, int64_t n, int *set,
                               rl_error *err);

/* A semaphore's wait that ran out (RL_NOT_ACQUIRED into err): "`count` permit(s) not free now"
 * or "within <seconds>", or, when the semaphore does not exist, that it has no permits and how
 * to set them (one EXISTS more; a user who never set permits waits for ever otherwise). */
rl_status rl_named_not_free(const rl_named *o, int64_t count, int64_t wait_ms, rl_error *err);

/* GET of the name as an integer (0 when it does not exist). */
rl_status rl_named_get_count(const rl_named *o, int64_t *out, rl_error *err);
/* An integer answer (a decimal string too; nil is 0), or RL_ERR_SERVER. */
rl_status rl_named_integer(const rl_named *o, const redisReply *reply, const char *call,
                           int64_t *out, rl_error *err);

/* One try of a wait: RL_OK (done), RL_NOT_ACQUIRED (not yet; *hint_ms: try again after this long
 * even if no message comes, -1: only on a message) or a failure. */
typedef rl_status (*rl_attempt_fn)(void *arg, int64_t *hint_ms, rl_error *err);

/* Tries; when that answers RL_NOT_ACQUIRED and wait_ms is not 0, listens on `channel` (`every`:
 * each message wakes every local waiter), tries again once subscribed and after each message or
 * hint, until done, the wait runs out (RL_NOT_ACQUIRED), the hook aborts or a failure. */
rl_status rl_wait_for(rl_client *client, const char *channel, size_t channel_len, int every,
                      rl_attempt_fn attempt, void *arg, int64_t wait_ms, rl_wait_hook hook,
                      void *hook_userdata, rl_error *err);

/* rl_wait_for as an async call (family_async.c): the tries run on the client's workers, woken by
 * a notified ticket on `channel` and a timer; `done` reports RL_OK, RL_NOT_ACQUIRED (its message
 * by ran_out), RL_ABORTED (cancelled: a try that succeeded meanwhile is undone) or a failure.
 * `arg` is the call's: steps->free_arg(arg) when it is freed (or cannot start). The object that
 * owns `channel` must outlive the call. */
typedef struct rl_wait_steps {
    rl_attempt_fn attempt;
    void (*undo)(void *arg);                                    /* may be NULL */
    void (*ran_out)(void *arg, int64_t wait_ms, rl_error *err); /* may be NULL */
    void (*free_arg)(void *arg);                                /* may be NULL */
} rl_wait_steps;
rl_status rl_wait_for_async(rl_client *client, const char *channel, size_t channel_len, int every,
                            const rl_wait_steps *steps, void *arg, int64_t wait_ms, rl_done_fn done,
                            void *userdata, rl_call **out, rl_error *err);

/* A wait below RL_WAIT_FOREVER or beyond RL_MAX_LEASE_MS is refused. */
rl_status rl_check_wait(int64_t wait_ms, rl_error *err);

#endif
