/* The lock userdata: acquire (which makes a hold) and the queries, each a direct core call for
 * the running coroutine. */
#include <stdlib.h>

#include "binding.h"

void rlua_shared_unref(rlua_shared_lock *shared) {
    if (shared && --shared->refs == 0) {
        rl_lock_free(shared->core);
        free(shared);
    }
}

static rlua_shared_lock *check_lock(lua_State *L) {
    rlua_lock *l = luaL_checkudata(L, 1, RLUA_LOCK);
    if (!l->shared) luaL_argerror(L, 1, "the lock was finalized");
    return l->shared;
}

/* The wait hook: a wait gives up when a debug hook appears on the waiting coroutine or the main
 * thread, which is how lua.c and luajit.c answer Ctrl-C; the interpreter then raises its
 * "interrupted!" at the next instruction. Otherwise the wait sleeps (no polling of Redis). */
typedef struct wait_watch {
    lua_State *threads[2];
    lua_Hook hooks[2];
    int masks[2];
} wait_watch;

static void watch_start(wait_watch *w, lua_State *L) {
    w->threads[0] = L;
    w->threads[1] = rlua_main_thread(L);
    for (int i = 0; i < 2; i++) {
        w->hooks[i] = w->threads[i] ? lua_gethook(w->threads[i]) : NULL;
        w->masks[i] = w->threads[i] ? lua_gethookmask(w->threads[i]) : 0;
    }
}

static int hook_appeared(void *userdata) {
    wait_watch *w = userdata;
    for (int i = 0; i < 2; i++) {
        lua_State *T = w->threads[i];
        if (T && (lua_gethook(T) != w->hooks[i] || lua_gethookmask(T) != w->masks[i])) return 1;
    }
    return 0;
}

/* lock:acquire(lease_ms, wait_ms[, max_hold_ms]) -> hold | nil, err. lease_ms -1: watchdog;
 * wait_ms -1: forever, 0: one try; max_hold_ms nil/0: the client's, -1: none. */
static int lock_acquire(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    int64_t lease = rlua_check_ms(L, 2), wait = rlua_check_ms(L, 3);
    int64_t max_hold = lua_isnoneornil(L, 4) ? 0 : rlua_check_ms(L, 4);
    luaL_argcheck(L, lease != 0, 2, "lease must be > 0 or -1");
    uint64_t context = rlua_context(L);
    rlua_hold *h = rlua_hold_new(L, 1, shared);
    wait_watch watch;
    watch_start(&watch, L);
    rl_error err;
    rl_acquire_options options = {.lease_ms = lease,
                                  .wait_ms = wait,
                                  .max_hold_ms = max_hold,
                                  .hook = hook_appeared,
                                  .hook_userdata = &watch};
    rl_status st = rl_lock_acquire_with(shared->core, context, &options, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err); /* the unopened hold is garbage */
    h->context = context;
    h->open = 1;
    rlua_renew_sentinel(L);
    return 1;
}

/* lock:release() -> true | nil, err: one hold of the running coroutine. */
static int lock_release(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    rl_error err;
    rl_status st = rl_lock_release(shared->core, rlua_context(L), &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int lock_force_unlock(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    int deleted = 0;
    rl_error err;
    rl_status st = rl_lock_force_unlock(shared->core, &deleted, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, deleted);
    return 1;
}

/* A server-side query (one round trip): a boolean or an integer, or nil, err. */
static int query(lua_State *L, rl_query what, int boolean) {
    rlua_shared_lock *shared = check_lock(L);
    int64_t value = 0;
    rl_error err;
    rl_status st = rl_lock_query(shared->core, what, rlua_context(L), &value, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    if (boolean)
        lua_pushboolean(L, value != 0);
    else
        lua_pushinteger(L, (lua_Integer)value);
    return 1;
}

static int lock_locked(lua_State *L) {
    return query(L, RL_QUERY_LOCKED, 1);
}

static int lock_held(lua_State *L) {
    return query(L, RL_QUERY_HELD, 1);
}

static int lock_hold_count(lua_State *L) {
    return query(L, RL_QUERY_HOLD_COUNT, 0);
}

/* lock:remaining() -> PTTL in ms as Redis gives it (-2: not locked, -1: no expiry). */
static int lock_remaining(lua_State *L) {
    return query(L, RL_QUERY_REMAINING, 0);
}

/* lock:lost() -> false | true, reason: local state, no round trip. */
static int lock_lost(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    rl_lost_reason reason;
    if (!rl_lock_lost(shared->core, rlua_context(L), &reason)) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_pushboolean(L, 1);
    lua_pushstring(L, rl_lost_reason_name(reason));
    return 2;
}

/* lock:valid_for() -> seconds for which the running coroutine's hold is still guaranteed on
 * this host's clock (0 when nothing is): local state, no round trip. */
static int lock_valid_for(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    int64_t until = rl_lock_valid_until(shared->core, rlua_context(L));
    int64_t left = until ? until - rl_monotonic_ms() : 0;
    lua_pushnumber(L, left > 0 ? (lua_Number)left / 1000.0 : 0.0);
    return 1;
}

/* lock:in_doubt() -> boolean: a renewal failed or is late; the hold may still be valid. */
static int lock_in_doubt(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    lua_pushboolean(L, rl_lock_state(shared->core, rlua_context(L), NULL) == RL_HOLD_IN_DOUBT);
    return 1;
}

/* lock:_check(min_left_ms) -> seconds left | nil, "in_doubt: ..." / "lost: ..." /
 * "not_owned: ...". */
static int lock_check(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    int64_t min_left = (int64_t)luaL_checknumber(L, 2), left;
    rl_error err;
    rl_status st = rl_lock_check(shared->core, rlua_context(L), min_left, &left, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushnumber(L, (lua_Number)left / 1000.0);
    return 1;
}

/* lock:token() -> the fencing token of the running coroutine's hold, or nil (none, or not a
 * fenced lock): local state, no round trip. */
static int lock_token(lua_State *L) {
    rlua_shared_lock *shared = check_lock(L);
    int64_t token = rl_lock_token(shared->core, rlua_context(L));
    if (token > 0)
        lua_pushinteger(L, (lua_Integer)token);
    else
        lua_pushnil(L);
    return 1;
}

static int lock_gc(lua_State *L) {
    rlua_lock *l = luaL_checkudata(L, 1, RLUA_LOCK);
    rlua_shared_unref(l->shared);
    l->shared = NULL;
    return 0;
}

void rlua_lock_register(lua_State *L) {
    static const luaL_Reg methods[] = {{"acquire", lock_acquire},
                                       {"release", lock_release},
                                       {"force_unlock", lock_force_unlock},
                                       {"locked", lock_locked},
                                       {"held", lock_held},
                                       {"hold_count", lock_hold_count},
                                       {"remaining", lock_remaining},
                                       {"lost", lock_lost},
                                       {"token", lock_token},
                                       {"valid_for", lock_valid_for},
                                       {"in_doubt", lock_in_doubt},
                                       {"_check", lock_check},
                                       {"extend", rlua_lock_extend},
                                       {"reacquire", rlua_lock_reacquire},
                                       {"release_token", rlua_lock_release_token},
                                       {"hand_off", rlua_lock_hand_off},
                                       {NULL, NULL}};
    rlua_register_type(L, RLUA_LOCK, methods, lock_gc, NULL);
}
