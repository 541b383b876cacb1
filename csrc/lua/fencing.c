/* Fencing checked by Redis-stored data, from Lua: client:fenced_set (rl_fenced_set does the
 * work: one script, the same the C core, Python and OpenResty send). */
#include "binding.h"

/* client:fenced_set(key, value, token) -> true, fence before | false, fence (a stale token:
 * refused) | nil, err */
int rlua_client_fenced_set(lua_State *L) {
    rlua_client *c = luaL_checkudata(L, 1, RLUA_CLIENT);
    if (!c->core) return luaL_error(L, "closed: the client is closed");
    size_t key_len, value_len;
    const char *key = luaL_checklstring(L, 2, &key_len);
    luaL_argcheck(L, key_len > 0, 2, "a key must not be empty");
    const char *value = luaL_checklstring(L, 3, &value_len);
    lua_Number t = luaL_checknumber(L, 4);
    luaL_argcheck(L, t >= 1 && t <= 9007199254740992.0 && (lua_Number)(int64_t)t == t, 4,
                  "a fencing token (a whole number from 1 to 2^53) expected");
    int written = 0;
    int64_t fence = 0;
    rl_error err;
    rl_status st =
        rl_fenced_set(c->core, key, key_len, value, value_len, (int64_t)t, &written, &fence, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, written);
    lua_pushinteger(L, (lua_Integer)fence);
    return 2;
}
