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
#include "multilock.h"
#include "names.h"
#include "random.h"

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

/* One tryLock(wait, lease) of RedissonMultiLock (RedLock: with its majority rule), as steps that
 * the blocking acquire runs in a loop and the async one (multilock_async.c) between member
 * calls: round_next says which member to acquire with what options, round_answer takes its
 * outcome, round_tick counts the time spent, round_end decides. */
rl_status rl_round_begin(rl_round *r, rl_multilock *m, uint64_t context, int64_t wait,
                         int64_t lease, const rl_acquire_options *o, rl_error *err) {
    const size_t n = m->n;
    *r = (rl_round){.m = m, .context = context, .wait = wait, .lease = lease, .o = *o};
    r->tolerated = m->redlock ? n - (n / 2 + 1) : 0;
    r->taken_lease = lease <= 0 ? RL_LEASE_WATCHDOG : wait > 0 ? wait * 2 : lease;
    if (r->taken_lease > RL_MAX_LEASE_MS) r->taken_lease = RL_MAX_LEASE_MS;
    r->start = r->time = rl_now_ms();
    r->remain = wait > 0 ? wait : -1;
    r->lock_wait = r->remain;
    if (m->redlock) r->lock_wait = r->remain / (int64_t)n > 1 ? r->remain / (int64_t)n : 1;
    r->taken = calloc(n, 1);
    if (!r->taken) return rl_fail(err, RL_ERR_MEMORY, "out of memory");
    r->left_to_fail = r->tolerated;
    r->failed_on_errors = 1;
    r->failure = (rl_error){.status = RL_NOT_ACQUIRED, .message = ""};
    return RL_OK;
}

void rl_round_free(rl_round *r) {
    free(r->taken);
    r->taken = NULL;
}

int rl_round_next(rl_round *r, rl_acquire_options *member) {
    if (r->over || r->i >= r->m->n) return 0;
    *member = r->o;
    member->lease_ms = r->taken_lease;
    member->wait_ms = 0;
    if (r->wait > 0 || r->lease > 0) {
        int64_t await = min64(r->lock_wait, r->remain);
        member->wait_ms = await > 0 ? await : 0;
    }
    r->held_before = rl_lock_local_holds(r->m->locks[r->i], r->context);
    return 1;
}

int rl_round_answer(rl_round *r, rl_status st, const rl_error *e, rl_error *err) {
    rl_multilock *m = r->m;
    const size_t n = m->n;
    r->pause_ms = 0;
    if (st == RL_OK) {
        r->taken[r->i] = 1;
        r->ntaken++;
        r->i++;
        return 1;
    }
    int counted =
        st == RL_NOT_ACQUIRED ||
        (m->redlock && (st == RL_ERR_CONNECTION || st == RL_ERR_SERVER || st == RL_ERR_REPLICA));
    if (!counted) { /* aborted, closed, lost, bad input; a multi-lock's errors */
        release_taken(m, r->context, r->taken);
        if (err) *err = *e;
        r->hard = st;
        return -1;
    }
    if (st == RL_ERR_CONNECTION && r->held_before == 0)
        undo_maybe_taken(m->locks[r->i], r->context, r->taken_lease);
    if (st == RL_NOT_ACQUIRED) r->failed_on_errors = 0;
    r->failure = *e;
    if (n - r->ntaken == r->tolerated) return 0; /* RedLock: the rest may fail; a majority is in */
    if (r->left_to_fail == 0) {
        release_taken(m, r->context, r->taken);
        r->ntaken = 0;
        if (r->wait <= 0) return 0;
        r->left_to_fail = r->tolerated;
        r->i = 0; /* start over */
        if (r->failed_on_errors)
            r->pause_ms = min64(ERROR_PAUSE_MS, r->remain - (rl_now_ms() - r->time));
        r->failed_on_errors = 1;
    } else {
        r->left_to_fail--;
        r->i++;
    }
    return 1;
}

int rl_round_tick(rl_round *r) {
    if (r->remain > 0) {
        int64_t now = rl_now_ms();
        r->remain -= now - r->time;
        r->time = now;
        if (r->remain <= 0) {
            release_taken(r->m, r->context, r->taken);
            r->ntaken = 0;
            r->over = 1;
            return 0;
        }
    }
    return 1;
}

rl_status rl_round_end(rl_round *r, rl_error *err) {
    rl_multilock *m = r->m;
    const size_t n = m->n;
    rl_status st = r->ntaken > 0 && r->ntaken >= n - r->tolerated ? RL_OK : RL_NOT_ACQUIRED;
    if (st == RL_OK && m->redlock &&
        !still_valid(m, r->context, r->taken, r->taken_lease, rl_now_ms() - r->start)) {
        release_taken(m, r->context, r->taken);
        r->failure = (rl_error){.status = RL_NOT_ACQUIRED};
        rl_fail(&r->failure, RL_NOT_ACQUIRED, "the majority was taken too late (validity ran out)");
        st = RL_NOT_ACQUIRED;
    }
    for (size_t i = 0; st == RL_OK && r->lease > 0 && i < n; i++) {
        if (r->taken[i] && (st = lock_lease(m->locks[i], r->context, r->lease, err)) != RL_OK)
            release_taken(m, r->context, r->taken);
    }
    if (st == RL_NOT_ACQUIRED) {
        size_t need = n - r->tolerated;
        char waited[RL_WAITED_SIZE];
        rl_fail(err, RL_NOT_ACQUIRED, "%s not acquired%s%s: %zu of %zu lock(s) needed%s%s",
                m->redlock ? "RedLock" : "multi-lock", r->wait > 0 ? " " : "",
                rl_waited(r->wait, "", waited), need, n,
                r->failure.message[0] ? "; last failure: " : "", r->failure.message);
    }
    rl_round_free(r);
    return st;
}

void rl_round_give_back(rl_round *r) {
    release_taken(r->m, r->context, r->taken);
    r->ntaken = 0;
    rl_round_free(r);
}

static rl_status try_all(rl_multilock *m, uint64_t context, int64_t wait, int64_t lease,
                         const rl_acquire_options *o, rl_error *err) {
    rl_round r;
    rl_status st = rl_round_begin(&r, m, context, wait, lease, o, err);
    if (st != RL_OK) return st;
    rl_acquire_options member;
    while (rl_round_next(&r, &member)) {
        rl_error e;
        st = rl_lock_acquire_with(m->locks[r.i], context, &member, &e);
        int go = rl_round_answer(&r, st, &e, err);
        if (go < 0) {
            rl_round_free(&r);
            return r.hard;
        }
        if (go == 0) break;
        if (r.pause_ms > 0 && pause_ms(r.pause_ms, o->hook, o->hook_userdata)) {
            rl_round_free(&r);
            return rl_fail(err, RL_ABORTED, "the wait was interrupted");
        }
        if (!rl_round_tick(&r)) break;
    }
    return rl_round_end(&r, err);
}

int64_t rl_round_forever_wait(const rl_multilock *m, int64_t lease) {
    /* RedissonMultiLock.lockInterruptibly: tries of a bounded wait, until one succeeds. */
    const int64_t base = (int64_t)m->n * BASE_WAIT_MS;
    int64_t one_wait = base;
    if (lease > 0)
        one_wait = lease <= base ? random_between(lease / 2, lease) : random_between(base, lease);
    return one_wait < 1 ? 1 : one_wait;
}

rl_status rl_multilock_check(const rl_multilock *m, const rl_acquire_options *o, rl_error *err) {
    rl_error_clear(err);
    if (!m) return rl_fail(err, RL_ERR_ARGUMENT, "multi-lock must not be NULL");
    if (!o) return rl_fail(err, RL_ERR_ARGUMENT, "options must not be NULL");
    int64_t lease = o->lease_ms, wait = o->wait_ms;
    if ((lease <= 0 && lease != RL_LEASE_WATCHDOG) || lease > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT,
                       "lease must be from 1 ms to 2^40 ms (or the watchdog mode)");
    if (wait < RL_WAIT_FOREVER || wait > RL_MAX_LEASE_MS)
        return rl_fail(err, RL_ERR_ARGUMENT, "a wait must be from 0 to 2^40 ms, or forever (-1)");
    return RL_OK;
}

rl_status rl_multilock_acquire(rl_multilock *m, uint64_t context, const rl_acquire_options *o,
                               rl_error *err) {
    rl_status st = rl_multilock_check(m, o, err);
    if (st != RL_OK) return st;
    if (o->wait_ms != RL_WAIT_FOREVER) return try_all(m, context, o->wait_ms, o->lease_ms, o, err);
    for (;;) {
        st = try_all(m, context, rl_round_forever_wait(m, o->lease_ms), o->lease_ms, o, err);
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
