/* The multi-lock userdata (rl_multilock over lock userdata, a RedLock when asked) and its hold:
 * one acquire of every lock for the running coroutine, released once, by the Lua guard or, as
 * a lock hold's, by its finalizer once nothing can reach it. */
#include <stdlib.h>

#include "binding.h"

#define RLUA_MULTIHOLD "redlease.multihold"

/* The core multi-lock and the locks it uses, shared by its userdata and its holds: whichever
 * finalizer runs last frees it, whatever order the collector picks (as rlua_shared_lock). */
typedef struct shared_multi {
    rl_multilock *core;
    rlua_shared_lock **locks;
    size_t n;
    int refs;
} shared_multi;

typedef struct rlua_multilock {
    shared_multi *shared; /* NULL once collected */
} rlua_multilock;

typedef struct rlua_multihold {
    shared_multi *shared;
    uint64_t context;
    int open;
} rlua_multihold;

static void shared_unref(shared_multi *m) {
    if (!m || --m->refs > 0) return;
    rl_multilock_free(m->core);
    for (size_t i = 0; i < m->n; i++)
        rlua_shared_unref(m->locks[i]);
    free(m->locks);
    free(m);
}

static rl_multilock *check_multilock(lua_State *L) {
    rlua_multilock *m = luaL_checkudata(L, 1, RLUA_MULTILOCK);
    if (!m->shared) luaL_argerror(L, 1, "the multi-lock was finalized");
    return m->shared->core;
}

/* The lock userdata at idx, or NULL when the value is something else. */
static rlua_lock *to_lock(lua_State *L, int idx) {
    rlua_lock *l = lua_touserdata(L, idx);
    if (!l || !lua_getmetatable(L, idx)) return NULL;
    luaL_getmetatable(L, RLUA_LOCK);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same && l->shared ? l : NULL;
}

/* core.multilock({lock, ...}, redlock) -> multi-lock userdata. */
int rlua_multilock_new(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int redlock = lua_toboolean(L, 2);
    size_t n = 0;
    for (;; n++) {
        lua_rawgeti(L, 1, (int)n + 1);
        int end = lua_isnil(L, -1), is_lock = to_lock(L, -1) != NULL;
        lua_pop(L, 1);
        if (end) break;
        if (!is_lock) return luaL_argerror(L, 1, "locks expected");
    }
    rlua_multilock *m = rlua_newud(L, sizeof *m);
    m->shared = NULL;
    luaL_getmetatable(L, RLUA_MULTILOCK);
    lua_setmetatable(L, -2);
    shared_multi *shared = calloc(1, sizeof *shared);
    rl_lock **locks = malloc((n ? n : 1) * sizeof *locks);
    if (shared) shared->locks = calloc(n ? n : 1, sizeof *shared->locks);
    if (!shared || !locks || !shared->locks) {
        free(locks);
        if (shared) free(shared->locks);
        free(shared);
        return luaL_error(L, "memory: out of memory");
    }
    shared->refs = 1;
    m->shared = shared; /* from here on the finalizer frees it */
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 1, (int)i + 1);
        rlua_shared_lock *lock = to_lock(L, -1)->shared;
        lua_pop(L, 1);
        lock->refs++; /* the core locks live as long as the multi-lock */
        shared->locks[shared->n++] = lock;
        locks[i] = lock->core;
    }
    rl_error err;
    rl_status st = redlock ? rl_redlock_new(locks, n, &shared->core, &err)
                           : rl_multilock_new(locks, n, &shared->core, &err);
    free(locks);
    if (st == RL_ERR_ARGUMENT) return luaL_argerror(L, 1, err.message);
    if (st != RL_OK) {
        rlua_push_error(L, st, &err);
        return lua_error(L);
    }
    return 1;
}

/* multi:acquire(lease_ms, wait_ms[, max_hold_ms]) -> hold | nil, err: for the running
 * coroutine, as lock:acquire. */
static int multilock_acquire(lua_State *L) {
    rl_multilock *core = check_multilock(L);
    rl_acquire_options o;
    rl_acquire_options_init(&o);
    o.lease_ms = rlua_check_ms(L, 2);
    o.wait_ms = rlua_check_ms(L, 3);
    o.max_hold_ms = lua_isnoneornil(L, 4) ? 0 : rlua_check_ms(L, 4);
    luaL_argcheck(L, o.lease_ms != 0, 2, "lease must be > 0 or -1");
    uint64_t context = rlua_context(L);
    /* The hold first, so that nothing can fail between the acquire and it. */
    rlua_multihold *h = rlua_newud(L, sizeof *h);
    h->shared = NULL;
    h->context = 0;
    h->open = 0;
    luaL_getmetatable(L, RLUA_MULTIHOLD);
    lua_setmetatable(L, -2);
    h->shared = ((rlua_multilock *)lua_touserdata(L, 1))->shared;
    h->shared->refs++;
    rlua_wait w;
    rlua_wait_start(&w, L);
    o.hook = rlua_wait_hook;
    o.hook_userdata = &w;
    rl_error err;
    rl_status st = rl_multilock_acquire(core, context, &o, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err); /* the unopened hold is garbage */
    h->context = context;
    h->open = 1;
    rlua_renew_sentinel(L);
    return 1;
}

/* multi:release() -> true | nil, err: every lock of it the running coroutine holds. */
static int multilock_release(lua_State *L) {
    rl_multilock *core = check_multilock(L);
    rl_error err;
    return rlua_done(L, rl_multilock_release(core, rlua_context(L), &err), &err);
}

static int multilock_held(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)rl_multilock_held(check_multilock(L), rlua_context(L)));
    return 1;
}

static int multilock_gc(lua_State *L) {
    rlua_multilock *m = luaL_checkudata(L, 1, RLUA_MULTILOCK);
    shared_unref(m->shared);
    m->shared = NULL;
    return 0;
}

static rlua_multihold *check_multihold(lua_State *L) {
    return luaL_checkudata(L, 1, RLUA_MULTIHOLD);
}

/* The hold stays open only when the core kept a lock's hold for a retry (err->hold_kept). */
static rl_status release_hold(rlua_multihold *h, rl_error *err) {
    if (!h->open) return RL_OK;
    rl_status st = rl_multilock_release(h->shared->core, h->context, err);
    if (st == RL_OK || !err->hold_kept) h->open = 0;
    return st;
}

/* hold:release() -> true | nil, err; once released, true again. */
static int multihold_release(lua_State *L) {
    rl_error err;
    return rlua_done(L, release_hold(check_multihold(L), &err), &err);
}

static int multihold_is_open(lua_State *L) {
    lua_pushboolean(L, check_multihold(L)->open);
    return 1;
}

/* Nobody can reach the hold: its coroutine was collected. When the state closes, the sentinel
 * has closed every client first: the release answers "closed" and the leases end the holds. */
static int multihold_gc(lua_State *L) {
    rlua_multihold *h = check_multihold(L);
    if (h->shared) {
        rl_error err;
        release_hold(h, &err);
        h->open = 0;
        shared_unref(h->shared);
        h->shared = NULL;
    }
    return 0;
}

void rlua_multilock_register(lua_State *L) {
    static const luaL_Reg multilock[] = {{"acquire", multilock_acquire},
                                         {"release", multilock_release},
                                         {"held", multilock_held},
                                         {NULL, NULL}};
    static const luaL_Reg multihold[] = {
        {"release", multihold_release}, {"is_open", multihold_is_open}, {NULL, NULL}};
    rlua_register_type(L, RLUA_MULTILOCK, multilock, multilock_gc, NULL);
    rlua_register_type(L, RLUA_MULTIHOLD, multihold, multihold_gc, NULL);
}
