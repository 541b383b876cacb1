/* The semaphore userdata (rl_semaphore) and the permit-expirable semaphore userdata
 * (rl_expirable): direct core calls; luarocks/redlease/semaphore.lua gives them Lua's habits. */
#include "binding.h"

static rl_semaphore *check_semaphore(lua_State *L) {
    rl_semaphore **s = luaL_checkudata(L, 1, RLUA_SEMAPHORE);
    if (!*s) luaL_argerror(L, 1, "the semaphore was finalized");
    return *s;
}

/* sem:try_set_permits(n) -> bool | nil, err */
static int semaphore_try_set(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    int set = 0;
    rl_error err;
    rl_status st = rl_semaphore_try_set_permits(s, rlua_check_count(L, 2), &set, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, set);
    return 1;
}

static int semaphore_add(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    rl_error err;
    return rlua_done(L, rl_semaphore_add_permits(s, rlua_check_count(L, 2), &err), &err);
}

/* sem:acquire(permits, wait_ms) -> true | nil, err */
static int semaphore_acquire(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    int64_t permits = rlua_check_count(L, 2), wait = rlua_check_ms(L, 3);
    rlua_wait w;
    rlua_wait_start(&w, L);
    rl_error err;
    return rlua_done(L, rl_semaphore_acquire(s, permits, wait, rlua_wait_hook, &w, &err), &err);
}

static int semaphore_release(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    rl_error err;
    return rlua_done(L, rl_semaphore_release(s, rlua_check_count(L, 2), &err), &err);
}

/* A count answer: the number, or nil and the error. */
static int count_answer(lua_State *L, rl_status st, int64_t n, const rl_error *err) {
    if (st != RL_OK) return rlua_fail(L, st, err);
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

static int semaphore_available(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    int64_t n = 0;
    rl_error err;
    rl_status st = rl_semaphore_available(s, &n, &err);
    return count_answer(L, st, n, &err);
}

static int semaphore_drain(lua_State *L) {
    rl_semaphore *s = check_semaphore(L);
    int64_t n = 0;
    rl_error err;
    rl_status st = rl_semaphore_drain(s, &n, &err);
    return count_answer(L, st, n, &err);
}

static int semaphore_held(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)rl_semaphore_held(check_semaphore(L)));
    return 1;
}

static int semaphore_gc(lua_State *L) {
    rl_semaphore **s = luaL_checkudata(L, 1, RLUA_SEMAPHORE);
    rl_semaphore_free(*s);
    *s = NULL;
    return 0;
}

/* ---- permit-expirable ------------------------------------------------------------------- */

static rl_expirable *check_expirable(lua_State *L) {
    rl_expirable **s = luaL_checkudata(L, 1, RLUA_EXPIRABLE);
    if (!*s) luaL_argerror(L, 1, "the semaphore was finalized");
    return *s;
}

static int expirable_try_set(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    int set = 0;
    rl_error err;
    rl_status st = rl_expirable_try_set_permits(s, rlua_check_count(L, 2), &set, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, set);
    return 1;
}

static int expirable_add(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    rl_error err;
    return rlua_done(L, rl_expirable_add_permits(s, rlua_check_count(L, 2), &err), &err);
}

/* sem:acquire(lease_ms (-1: watchdog), wait_ms) -> permit id | nil, err */
static int expirable_acquire(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    int64_t lease = rlua_check_ms(L, 2), wait = rlua_check_ms(L, 3);
    rlua_wait w;
    rlua_wait_start(&w, L);
    char id[RL_PERMIT_ID_LEN + 1];
    rl_error err;
    rl_status st = rl_expirable_acquire(s, lease, wait, rlua_wait_hook, &w, id, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushlstring(L, id, RL_PERMIT_ID_LEN);
    return 1;
}

static int expirable_release(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    const char *id = luaL_checkstring(L, 2);
    rl_error err;
    return rlua_done(L, rl_expirable_release(s, id, &err), &err);
}

static int expirable_update_lease(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    const char *id = luaL_checkstring(L, 2);
    rl_error err;
    return rlua_done(L, rl_expirable_update_lease(s, id, rlua_check_ms(L, 3), &err), &err);
}

static int expirable_available(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    int64_t n = 0;
    rl_error err;
    rl_status st = rl_expirable_available(s, &n, &err);
    return count_answer(L, st, n, &err);
}

/* sem:lost(id) -> false | true, reason: local, no round trip. */
static int expirable_lost(lua_State *L) {
    rl_expirable *s = check_expirable(L);
    rl_lost_reason reason;
    if (!rl_expirable_lost(s, luaL_checkstring(L, 2), &reason)) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_pushboolean(L, 1);
    lua_pushstring(L, rl_lost_reason_name(reason));
    return 2;
}

static int expirable_gc(lua_State *L) {
    rl_expirable **s = luaL_checkudata(L, 1, RLUA_EXPIRABLE);
    rl_expirable_free(*s);
    *s = NULL;
    return 0;
}

void rlua_semaphore_register(lua_State *L) {
    static const luaL_Reg semaphore[] = {{"try_set_permits", semaphore_try_set},
                                         {"add_permits", semaphore_add},
                                         {"acquire", semaphore_acquire},
                                         {"release", semaphore_release},
                                         {"available", semaphore_available},
                                         {"drain", semaphore_drain},
                                         {"held", semaphore_held},
                                         {NULL, NULL}};
    static const luaL_Reg expirable[] = {{"try_set_permits", expirable_try_set},
                                         {"add_permits", expirable_add},
                                         {"acquire", expirable_acquire},
                                         {"release", expirable_release},
                                         {"update_lease", expirable_update_lease},
                                         {"available", expirable_available},
                                         {"lost", expirable_lost},
                                         {NULL, NULL}};
    rlua_register_type(L, RLUA_SEMAPHORE, semaphore, semaphore_gc, NULL);
    rlua_register_type(L, RLUA_EXPIRABLE, expirable, expirable_gc, NULL);
}
