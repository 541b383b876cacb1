/* The count-down latch userdata (rl_countdown): direct core calls. */
#include "binding.h"

static rl_countdown *check_countdown(lua_State *L) {
    rl_countdown **l = luaL_checkudata(L, 1, RLUA_COUNTDOWN);
    if (!*l) luaL_argerror(L, 1, "the latch was finalized");
    return *l;
}

static int countdown_try_set(lua_State *L) {
    rl_countdown *l = check_countdown(L);
    int set = 0;
    rl_error err;
    rl_status st = rl_countdown_try_set_count(l, rlua_check_count(L, 2), &set, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, set);
    return 1;
}

static int countdown_count_down(lua_State *L) {
    rl_countdown *l = check_countdown(L);
    rl_error err;
    return rlua_done(L, rl_countdown_count_down(l, &err), &err);
}

static int countdown_count(lua_State *L) {
    rl_countdown *l = check_countdown(L);
    int64_t n = 0;
    rl_error err;
    rl_status st = rl_countdown_count(l, &n, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

/* latch:wait(wait_ms) -> true | nil, err ("timeout: ..." when it did not reach 0 in time) */
static int countdown_wait(lua_State *L) {
    rl_countdown *l = check_countdown(L);
    int64_t wait = rlua_check_ms(L, 2);
    rlua_wait w;
    rlua_wait_start(&w, L);
    rl_error err;
    return rlua_done(L, rl_countdown_wait(l, wait, rlua_wait_hook, &w, &err), &err);
}

static int countdown_delete(lua_State *L) {
    rl_countdown *l = check_countdown(L);
    int deleted = 0;
    rl_error err;
    rl_status st = rl_countdown_delete(l, &deleted, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, deleted);
    return 1;
}

static int countdown_gc(lua_State *L) {
    rl_countdown **l = luaL_checkudata(L, 1, RLUA_COUNTDOWN);
    rl_countdown_free(*l);
    *l = NULL;
    return 0;
}

void rlua_countdown_register(lua_State *L) {
    static const luaL_Reg methods[] = {
        {"try_set_count", countdown_try_set}, {"count_down", countdown_count_down},
        {"count", countdown_count},           {"wait", countdown_wait},
        {"delete", countdown_delete},         {NULL, NULL}};
    rlua_register_type(L, RLUA_COUNTDOWN, methods, countdown_gc, NULL);
}
