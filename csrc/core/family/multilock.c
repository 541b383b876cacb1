/* Multi-locks and RedLock over rl_lock objects, with the timing rules of Redisson 4.7.0's
 * RedissonMultiLock.tryLock and RedissonRedLock:
 *
 * - one wait covers all the locks; each lock waits at most what is left of it (RedLock: at most
 *   that divided by the number of locks, and at least 1 ms);
 * - with a fixed lease, the locks are taken with a lease of twice the wait (or the lease itself
 *   without a wait), so that the first ones cannot expire while the last ones are waited for;
 *   once all are taken, each gets the lease asked for (redlease sets it only where this owner
 *   still holds the lock; Redisson's PEXPIRE does not look);
 * - a lock that cannot be had releases every lock taken; without a wait the acquire fails, with
 *   one it starts over from the first lock while the wait lasts;
 * - RedLock: the first n - (n/2 + 1) failures are tolerated; once that many locks are left
 *   untaken the rest are not tried; a majority taken is then kept only when the time spent
 *   leaves some of the lease (its validity: lease - elapsed - 1% - 2 ms), as the Redis RedLock
 *   algorithm asks (Redisson does not check it);
 * - waiting forever is a series of such tries: each waits n * 1.5 s, or with a fixed lease a
 *   random part of it (from lease/2, or from n * 1.5 s when the lease is longer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "error.h"
#include "extend.h"
#include "lock.h"
#include "names.h"
#include "random.h"

struct rl_multilock {
    size_t n;
    int redlock;
    rl_lock **locks; /* not owned */
};

#define BASE_WAIT_MS 1500  /* per lock, for one try of a wait without end */
#define ERROR_PAUSE_MS 100 /* RedLock: a round that failed on errors only waits this long */
#define HOOK_SLICE_MS 50

static rl_status make(rl_lock *const *locks, size_t n, int redlock, rl_multilock **out,
                      rl_error *err) {
    rl_error_clear(err);
    if (!out) return rl_fail(err, RL_ERR_ARGUMENT, "out must not be NULL");
    *out = NULL;
    if (!locks || n == 0) return rl_fail(err, RL_ERR_ARGUMENT, "a multi-lock needs locks");
    for (size_t i = 0; i < n; i++) {
        if (!locks[i]) return rl_fail(err, RL_ERR_ARGUMENT, "lock %zu is NULL", i);
        for (size_t j = 0; j < i; j++) {
            const rl_lock *a = locks[i], *b = locks[j];
            if (a->client == b->client && a->kind == b->kind && a->name_len == b->name_len &&
                memcmp(a->name, b->name, a->name_len) == 0) {
                char shown[RL_NAME_SHOWN_MAX];
                return rl_fail(err, RL_ERR_ARGUMENT, "lock \"%s\" is given twice",
                               rl_name_shown(a->name, a->name_len, shown));
            }
        }
    }
    rl_multilock *m = calloc(1, sizeof *m);
    if (m) m->locks = malloc(n * sizeof *m->locks);
    if (!m || !m->locks) {
        free(m);
        return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    }
    memcpy(m->locks, locks, n * sizeof *locks);
    m->n = n;
    m->redlock = redlock;
    *out = m;
    return RL_OK;
}

rl_status rl_multilock_new(rl_lock *const *locks, size_t n, rl_multilock **out, rl_error *err) {
    return make(locks, n, 0, out, err);
}

rl_status rl_redlock_new(rl_lock *const *locks, size_t n, rl_multilock **out, rl_error *err) {
    return make(locks, n, 1, out, err);
}

void rl_multilock_free(rl_multilock *m) {
    if (!m) return;
    free(m->locks);
    free(m);
}

size_t rl_multilock_held(rl_multilock *m, uint64_t context) {
    size_t held = 0;
    for (size_t i = 0; m && i < m->n; i++)
        held += rl_lock_local_holds(m->locks[i], context) > 0;
    return held;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* A random number in [lo, hi). */
static int64_t random_between(int64_t lo, int64_t hi) {
    char hex[17];
    rl_random_hex(hex, 8);
    uint64_t r = strtoull(hex, NULL, 16);
    return hi > lo ? lo + (int64_t)(r % (uint64_t)(hi - lo)) : lo;
}

/* Sleeps ms, in slices that ask the hook; 1 when it asked to stop. */
static int pause_ms(int64_t ms, rl_wait_hook hook, void *userdata) {
    for (int64_t until = rl_now_ms() + ms, left; (left = until - rl_now_ms()) > 0;) {
        int64_t slice = min64(left, HOOK_SLICE_MS);
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice * 1000000L};
        nanosleep(&ts, NULL);
        if (hook && hook(userdata)) return 1;
    }
    return 0;
}

/* Releases what this try took (taken[i]), whatever the outcome of each. */
static void release_taken(rl_multilock *m, uint64_t context, char *taken) {
    for (size_t i = 0; i < m->n; i++) {
        if (!taken[i]) continue;
        rl_error ignored;
        rl_lock_release(m->locks[i], context, &ignored);
        taken[i] = 0;
    }
}

/* An acquire that failed on the network may have been done by Redis: when this context held
 * nothing of the lock before, one release under a fresh latch takes it back (best effort). */
static void undo_maybe_taken(rl_lock *l, uint64_t context, int64_t lease) {
    if (rl_client_enter(l->client, NULL) != RL_OK) return;
    char owner[RL_OWNER_MAX];
    size_t owner_len = rl_client_owner(l->client, context, owner);
    if (lease <= 0) lease = l->client->cfg.options.watchdog_timeout_ms;
    rl_lock_call_undo_acquire(l, owner, owner_len, lease);
    rl_client_leave(l->client);
}

/* Gives a taken lock the lease asked for, where this owner still holds it: RL_OK, or RL_LOST
 * when the hold was gone meanwhile. */
static rl_status lock_lease(rl_lock *l, uint64_t context, int64_t lease, rl_error *err) {
    rl_status st = rl_client_enter(l->client, err);
    if (st != RL_OK) return st;
    st = rl_lock_set_lease(l, context, lease, 1, " while the multi-lock was taken", err);
    if (st == RL_NOT_OWNED) {
        char shown[RL_NAME_SHOWN_MAX];
        st = rl_fail_lost(err, RL_LOST_DELETED, " while the multi-lock was taken",
                          rl_name_shown(l->name, l->name_len, shown));
    }
    rl_client_leave(l->client);
    return st;
}

/* RedLock: the locks taken still make a majority, none of them lost, and the time spent leaves
 * some of the lease they were taken with. */
static int still_valid(rl_multilock *m, uint64_t context, const char *taken, int64_t lease,
                       int64_t elapsed) {
    size_t alive = 0;
    int64_t shortest = lease;
    for (size_t i = 0; i < m->n; i++) {
        if (!taken[i] || rl_lock_lost(m->locks[i], context, NULL)) continue;
        alive++;
        if (lease <= 0) { /* watchdog mode: the lease is each client's watchdog timeout */
            int64_t t = m->locks[i]->client->cfg.options.watchdog_timeout_ms;
            if (shortest <= 0 || t < shortest) shortest = t;
        }
    }
    int64_t drift = shortest / 100 + 2;
    return alive >= m->n / 2 + 1 && shortest - elapsed - drift > 0;
}

/* One tryLock(wait, lease) of RedissonMultiLock (RedLock: with its majority rule). */
static rl_status try_all(rl_multilock *m, uint64_t context, int64_t wait, int64_t lease,
                         const rl_acquire_options *o, rl_error *err) {
    const size_t n = m->n, tolerated = m->redlock ? n - (n / 2 + 1) : 0;
    int64_t taken_lease = lease <= 0 ? RL_LEASE_WATCHDOG : wait > 0 ? wait * 2 : lease;
    if (taken_lease > RL_MAX_LEASE_MS) taken_lease = RL_MAX_LEASE_MS;
    int64_t start = rl_now_ms(), time = start, remain = wait > 0 ? wait : -1;
    int64_t lock_wait = remain;
    if (m->redlock) lock_wait = remain / (int64_t)n > 1 ? remain / (int64_t)n : 1;
    char *taken = calloc(n, 1);
    if (!taken) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    size_t ntaken = 0, left_to_fail = tolerated;
    int failed_on_errors = 1;
    rl_error failure = {.status = RL_NOT_ACQUIRED, .message = ""};
    rl_status st = RL_OK;
    for (size_t i = 0; i < n;) {
        rl_acquire_options member = *o;
        member.lease_ms = taken_lease;
        member.wait_ms = 0;
        if (wait > 0 || lease > 0) {
            int64_t await = min64(lock_wait, remain);
            member.wait_ms = await > 0 ? await : 0;
        }
        int64_t held_before = rl_lock_local_holds(m->locks[i], context);
        rl_error e;
        st = rl_lock_acquire_with(m->locks[i], context, &member, &e);
        if (st == RL_OK) {
            taken[i] = 1;
            ntaken++;
            i++;
        } else {
            int counted = st == RL_NOT_ACQUIRED ||
                          (m->redlock && (st == RL_ERR_CONNECTION || st == RL_ERR_SERVER ||
                                          st == RL_ERR_REPLICA));
            if (!counted) { /* aborted, closed, lost, bad input; a multi-lock's errors */
                release_taken(m, context, taken);
                if (err) *err = e;
                free(taken);
                return st;
            }
            if (st == RL_ERR_CONNECTION && held_before == 0)
                undo_maybe_taken(m->locks[i], context, taken_lease);
            if (st == RL_NOT_ACQUIRED) failed_on_errors = 0;
            failure = e;
            if (n - ntaken == tolerated) break; /* RedLock: the rest may fail; a majority is in */
            if (left_to_fail == 0) {
                release_taken(m, context, taken);
                ntaken = 0;
                if (wait <= 0) break;
                left_to_fail = tolerated;
                i = 0; /* start over */
                if (failed_on_errors &&
                    pause_ms(min64(ERROR_PAUSE_MS, remain - (rl_now_ms() - time)), o->hook,
                             o->hook_userdata)) {
                    free(taken);
                    return rl_fail(err, RL_ABORTED, "the wait was interrupted");
                }
                failed_on_errors = 1;
            } else {
                left_to_fail--;
                i++;
            }
        }
        if (remain > 0) {
            int64_t now = rl_now_ms();
            remain -= now - time;
            time = now;
            if (remain <= 0) {
                release_taken(m, context, taken);
                ntaken = 0;
                break;
            }
        }
    }
    st = ntaken > 0 && ntaken >= n - tolerated ? RL_OK : RL_NOT_ACQUIRED;
    if (st == RL_OK && m->redlock &&
        !still_valid(m, context, taken, taken_lease, rl_now_ms() - start)) {
        release_taken(m, context, taken);
        failure = (rl_error){.status = RL_NOT_ACQUIRED};
        rl_fail(&failure, RL_NOT_ACQUIRED, "the majority was taken too late (validity ran out)");
        st = RL_NOT_ACQUIRED;
    }
    for (size_t i = 0; st == RL_OK && lease > 0 && i < n; i++) {
        if (taken[i] && (st = lock_lease(m->locks[i], context, lease, err)) != RL_OK)
            release_taken(m, context, taken);
    }
    if (st == RL_NOT_ACQUIRED) {
        size_t need = n - tolerated;
        char waited[RL_WAITED_SIZE];
        rl_fail(err, RL_NOT_ACQUIRED, "%s not acquired%s%s: %zu of %zu lock(s) needed%s%s",
                m->redlock ? "RedLock" : "multi-lock", wait > 0 ? " " : "",
                rl_waited(wait, "", waited), need, n, failure.message[0] ? "; last failure: " : "",
                failure.message);
    }
    free(taken);
    return st;
}

rl_status rl_multilock_acquire(rl_multilock *m, uint64_t context, const rl_acquire_options *o,
                               rl_error *err) {
    rl_error_clear(err);
    if (!m) return rl_fail(err, RL_ERR_ARGUMENT, "multi-lock must not be NULL");
    if (!o) return rl_fail(err, RL_ERR_ARGUMENT, "options must not be NULL");
    int64_t lease = o->lease_ms, wait = o->wait_ms;
    if ((lease <= 0 && lease != RL_LEASE_WATCHDOG) || lease > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    if (wait < RL_WAIT_FOREVER || wait > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "a wait must be from 0 to 2^40 ms, or forever (-1)");
    if (wait != RL_WAIT_FOREVER) return try_all(m, context, wait, lease, o, err);
    /* RedissonMultiLock.lockInterruptibly: tries of a bounded wait, until one succeeds. */
    const int64_t base = (int64_t)m->n * BASE_WAIT_MS;
    for (;;) {
        int64_t one_wait = base;
        if (lease > 0)
            one_wait =
                lease <= base ? random_between(lease / 2, lease) : random_between(base, lease);
        if (one_wait < 1) one_wait = 1;
        rl_status st = try_all(m, context, one_wait, lease, o, err);
        if (st != RL_NOT_ACQUIRED) return st;
        if (o->hook && o->hook(o->hook_userdata))
            return rl_fail(err, RL_ABORTED, "the wait was interrupted");
    }
}

rl_status rl_multilock_release(rl_multilock *m, uint64_t context, rl_error *err) {
    rl_error_clear(err);
    if (!m) return rl_fail(err, RL_ERR_ARGUMENT, "multi-lock must not be NULL");
    rl_status first = RL_OK;
    size_t held = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (rl_lock_local_holds(m->locks[i], context) <= 0) continue;
        held++;
        rl_error e;
        rl_status st = rl_lock_release(m->locks[i], context, &e);
        if (st != RL_OK && first == RL_OK) {
            first = st;
            if (err) *err = e;
        }
    }
    if (held == 0)
        return rl_fail(err, RL_NOT_OWNED, "%s is not held by this context",
                       m->redlock ? "the RedLock" : "the multi-lock");
    return first;
}
