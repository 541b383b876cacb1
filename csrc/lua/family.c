/* What the family's userdata share: the Ctrl-C-aware wait, argument checks, and the
 * constructors of the module table (core.semaphore, core.permit_semaphore, core.countdown,
 * core.multilock). */
#include <string.h>

#include "binding.h"

void rlua_wait_start(rlua_wait *w, lua_State *L) {
    w->threads[0] = L;
    w->threads[1] = rlua_main_thread(L);
    for (int i = 0; i < 2; i++) {
        w->hooks[i] = w->threads[i] ? lua_gethook(w->threads[i]) : NULL;
        w->masks[i] = w->threads[i] ? lua_gethookmask(w->threads[i]) : 0;
    }
}

int rlua_wait_hook(void *userdata) {
    rlua_wait *w = userdata;
    for (int i = 0; i < 2; i++) {
        lua_State *T = w->threads[i];
        if (T && (lua_gethook(T) != w->hooks[i] || lua_gethookmask(T) != w->masks[i])) return 1;
    }
    return 0;
}

rl_client *rlua_check_client(lua_State *L, int arg) {
    rlua_client *c = luaL_checkudata(L, arg, RLUA_CLIENT);
    if (!c->core) luaL_error(L, "closed: the client is closed");
    return c->core;
}

int64_t rlua_check_count(lua_State *L, int arg) {
    lua_Number v = luaL_checknumber(L, arg);
    luaL_argcheck(
        L, v >= -9007199254740992.0 && v <= 9007199254740992.0 && (lua_Number)(int64_t)v == v, arg,
        "whole number expected");
    return (int64_t)v;
}

int rlua_done(lua_State *L, rl_status st, const rl_error *err) {
    if (st != RL_OK) return rlua_fail(L, st, err);
    lua_pushboolean(L, 1);
    return 1;
}

void *rlua_new_object(lua_State *L, size_t size, const char *type, int link_idx) {
    void *p = rlua_newud(L, size);
    memset(p, 0, size);
    luaL_getmetatable(L, type);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, link_idx);
    rlua_setlink(L, lua_gettop(L) - 1);
    return p;
}

/* Raises what the core said about a constructor's arguments, as the lock constructor does. */
static int made(lua_State *L, rl_status st, const rl_error *err) {
    if (st == RL_OK) return 1;
    if (st == RL_ERR_ARGUMENT) return luaL_argerror(L, 2, err->message);
    rlua_push_error(L, st, err);
    return lua_error(L);
}

typedef rl_status (*constructor)(rl_client *, const void *, size_t, void **, rl_error *);

/* core.<kind>(client, name) -> userdata of `type`, linked to the client (which it outlives). */
static int make(lua_State *L, const char *type, constructor make_core) {
    rl_client *client = rlua_check_client(L, 1);
    size_t len;
    const char *name = luaL_checklstring(L, 2, &len);
    void **core = rlua_new_object(L, sizeof(void *), type, 1);
    rl_error err;
    return made(L, make_core(client, name, len, core, &err), &err);
}

static rl_status semaphore_new(rl_client *c, const void *name, size_t len, void **out,
                               rl_error *err) {
    rl_semaphore *made_core = NULL;
    rl_status st = rl_semaphore_new(c, name, len, &made_core, err);
    *out = made_core;
    return st;
}

static rl_status expirable_new(rl_client *c, const void *name, size_t len, void **out,
                               rl_error *err) {
    rl_expirable *made_core = NULL;
    rl_status st = rl_expirable_new(c, name, len, &made_core, err);
    *out = made_core;
    return st;
}

static rl_status countdown_new(rl_client *c, const void *name, size_t len, void **out,
                               rl_error *err) {
    rl_countdown *made_core = NULL;
    rl_status st = rl_countdown_new(c, name, len, &made_core, err);
    *out = made_core;
    return st;
}

static int new_semaphore(lua_State *L) {
    return make(L, RLUA_SEMAPHORE, semaphore_new);
}

static int new_expirable(lua_State *L) {
    return make(L, RLUA_EXPIRABLE, expirable_new);
}

static int new_countdown(lua_State *L) {
    return make(L, RLUA_COUNTDOWN, countdown_new);
}

int rlua_multilock_new(lua_State *L);

void rlua_family_open(lua_State *L) {
    static const luaL_Reg functions[] = {{"semaphore", new_semaphore},
                                         {"permit_semaphore", new_expirable},
                                         {"countdown", new_countdown},
                                         {"multilock", rlua_multilock_new},
                                         {NULL, NULL}};
    rlua_setfuncs(L, functions);
}
