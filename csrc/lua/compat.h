/* The few Lua C API calls that differ between Lua 5.1 (and LuaJIT), 5.2, 5.3 and 5.4, under
 * private rlua_ names so that nothing clashes with LuaJIT's own 5.2-style additions. */
#ifndef RLUA_COMPAT_H
#define RLUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

/* A userdata with room for one Lua value linked to it (kept alive as long as it is). */
static inline void *rlua_newud(lua_State *L, size_t size) {
#if LUA_VERSION_NUM >= 504
    return lua_newuserdatauv(L, size, 1);
#else
    return lua_newuserdata(L, size);
#endif
}

/* Pops a value and links it to the userdata at idx (an absolute index). */
static inline void rlua_setlink(lua_State *L, int idx) {
#if LUA_VERSION_NUM >= 504
    lua_setiuservalue(L, idx, 1);
#elif LUA_VERSION_NUM == 503
    lua_setuservalue(L, idx);
#else
    /* 5.1 and 5.2 take only a table there: wrap the value in one. */
    lua_createtable(L, 1, 0);
    lua_insert(L, -2);
    lua_rawseti(L, -2, 1);
#if LUA_VERSION_NUM == 502
    lua_setuservalue(L, idx);
#else
    lua_setfenv(L, idx);
#endif
#endif
}

/* Sets the functions of `reg` into the table on top of the stack. */
static inline void rlua_setfuncs(lua_State *L, const luaL_Reg *reg) {
    for (; reg->name; reg++) {
        lua_pushcfunction(L, reg->func);
        lua_setfield(L, -2, reg->name);
    }
}

/* The length of the table at idx, without metamethods. */
static inline size_t rlua_rawlen(lua_State *L, int idx) {
#if LUA_VERSION_NUM >= 502
    return lua_rawlen(L, idx);
#else
    return lua_objlen(L, idx);
#endif
}

/* The state's main thread, or NULL where the API cannot tell (Lua 5.1 and LuaJIT). */
static inline lua_State *rlua_main_thread(lua_State *L) {
#if LUA_VERSION_NUM >= 502
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    lua_State *main = lua_tothread(L, -1);
    lua_pop(L, 1);
    return main;
#else
    (void)L;
    return NULL;
#endif
}

#endif
