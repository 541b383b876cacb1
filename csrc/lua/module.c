/* The module redlease.core: its per-state record, coroutine ids, the sentinel that closes every
 * client before the state (and so this library) goes away, and the error strings. */
#include <string.h>

#include "binding.h"

#define MODULE_KEY "redlease.module"
#define MODULE_TYPE "redlease.module_type"
#define CONTEXTS_KEY "redlease.contexts"
#define SENTINEL_KEY "redlease.sentinel" /* the current one */
#define SENTINEL_TYPE "redlease.sentinel_type"
#define NOTES_KEY "redlease.notes"

rlua_module *rlua_module_get(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, MODULE_KEY);
    rlua_module *m = lua_touserdata(L, -1); /* the registry keeps it alive */
    lua_pop(L, 1);
    return m;
}

/* Ids come from a counter, not from the lua_State address, which a new coroutine can reuse once
 * the old one is collected. The table has weak keys, so dead coroutines leave it. */
uint64_t rlua_context(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, CONTEXTS_KEY);
    lua_pushthread(L);
    lua_rawget(L, -2);
    if (lua_type(L, -1) == LUA_TNUMBER) {
        uint64_t id = (uint64_t)lua_tonumber(L, -1);
        lua_pop(L, 2);
        return id;
    }
    lua_pop(L, 1);
    uint64_t id = ++rlua_module_get(L)->last_context; /* 2^53 of them stay exact as numbers */
    lua_pushthread(L);
    lua_pushinteger(L, (lua_Integer)id);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    return id;
}

static void close_all(rlua_module *m) {
    while (m->open)
        rlua_client_close(m->open); /* unlinks it */
}

/* Only the current sentinel (the one the registry holds) can be finalized while the registry
 * still refers to it, and that happens only when the state closes. Older ones are garbage. */
static int sentinel_gc(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, SENTINEL_KEY);
    int current = lua_rawequal(L, -1, 1);
    lua_pop(L, 1);
    if (current) {
        rlua_module *m = rlua_module_get(L);
        if (m) close_all(m);
    }
    return 0;
}

void rlua_renew_sentinel(lua_State *L) {
    lua_newuserdata(L, 1);
    luaL_getmetatable(L, SENTINEL_TYPE);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, SENTINEL_KEY);
}

/* A fallback to the sentinel: the record is older than every client, so this runs after them. */
static int module_gc(lua_State *L) {
    close_all(lua_touserdata(L, 1));
    return 0;
}

static const char *code_word(rl_status status) {
    switch (status) {
    case RL_NOT_ACQUIRED:
        return "timeout";
    case RL_ABORTED:
        return "interrupted";
    default:
        return rl_status_name(status);
    }
}

void rlua_push_error(lua_State *L, rl_status status, const rl_error *err) {
    const char *word = code_word(status);
    rl_error named;
    if (status == RL_NOT_OWNED && err) {
        /* Lua's owner is the coroutine; a lock's hold can still be released from another one */
        named = *err;
        if (rl_error_name_owner(&named, "coroutine")) {
            const char *hint = strncmp(err->message, "lock ", 5) == 0
                                   ? "; a hold belongs to the coroutine that acquired it: to "
                                     "release it in another coroutine, call lock:hand_off() in "
                                     "the holding one and pass its token to "
                                     "lock:release_token(token)"
                                   : "";
            lua_pushfstring(L, "%s: %s%s", word, named.message, hint);
            return;
        }
    }
    lua_pushfstring(L, "%s: %s", word, err && err->message[0] ? err->message : word);
}

int rlua_fail(lua_State *L, rl_status status, const rl_error *err) {
    lua_pushnil(L);
    rlua_push_error(L, status, err);
    return 2;
}

int64_t rlua_check_ms(lua_State *L, int arg) {
    lua_Number v = luaL_checknumber(L, arg);
    luaL_argcheck(L, v >= -1 && v <= 9007199254740992.0 && (lua_Number)(int64_t)v == v, arg,
                  "whole milliseconds expected");
    return (int64_t)v;
}

void rlua_add_note(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, NOTES_KEY);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, NOTES_KEY);
    }
    lua_insert(L, -2);
    lua_rawseti(L, -2, (int)rlua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
}

/* core.take_notes() -> the notes kept since the last call (a list of strings), or nil. */
static int take_notes(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, NOTES_KEY);
    if (!lua_istable(L, -1)) return 0;
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, NOTES_KEY);
    return 1;
}

/* core.running(): the running coroutine, the main one included (5.1 gives nil there). */
static int running(lua_State *L) {
    lua_pushthread(L);
    return 1;
}

static void open_state(lua_State *L) {
    rlua_module *m = lua_newuserdata(L, sizeof *m);
    memset(m, 0, sizeof *m);
    luaL_newmetatable(L, MODULE_TYPE);
    lua_pushcfunction(L, module_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, MODULE_KEY);

    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, CONTEXTS_KEY);

    rlua_register_type(L, SENTINEL_TYPE, NULL, sentinel_gc, NULL);
    rlua_renew_sentinel(L);
}

void rlua_register_type(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                        lua_CFunction tostring) {
    luaL_newmetatable(L, name);
    if (methods) {
        lua_newtable(L);
        rlua_setfuncs(L, methods);
        lua_setfield(L, -2, "__index");
    }
    if (gc) {
        lua_pushcfunction(L, gc);
        lua_setfield(L, -2, "__gc");
    }
    if (tostring) {
        lua_pushcfunction(L, tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_pop(L, 1);
}

int luaopen_redlease_core(lua_State *L); /* the entry point require() looks for */

int luaopen_redlease_core(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, MODULE_KEY);
    int loaded = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!loaded) open_state(L);
    rlua_client_register(L);
    rlua_lock_register(L);
    rlua_hold_register(L);
    rlua_semaphore_register(L);
    rlua_countdown_register(L);
    rlua_multilock_register(L);

    static const luaL_Reg functions[] = {{"connect", rlua_client_connect},
                                         {"running", running},
                                         {"take_notes", take_notes},
                                         {NULL, NULL}};
    lua_newtable(L);
    rlua_setfuncs(L, functions);
    rlua_family_open(L);
    lua_pushliteral(L, RL_VERSION);
    lua_setfield(L, -2, "version");
    lua_pushboolean(L, rl_tls_supported());
    lua_setfield(L, -2, "tls_supported");
    rlua_push_options(L);
    lua_setfield(L, -2, "options");
    return 1;
}
