/* The hold userdata: one acquired hold, released once. Its finalizer is the guard's safety net:
 * the Lua side keeps guards reachable from their coroutine, so a hold nobody can reach belongs to
 * a coroutine that was collected, and is released here. When the state closes, the sentinel has
 * closed every client first: this is then a no-op and the holds expire by their lease. */
#include <stdio.h>

#include "binding.h"

rlua_hold *rlua_hold_new(lua_State *L, int lock_idx, rlua_shared_lock *shared) {
    rlua_hold *h = rlua_newud(L, sizeof *h);
    h->lock = NULL;
    h->context = 0;
    h->open = 0;
    luaL_getmetatable(L, RLUA_HOLD);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, lock_idx); /* keeps the lock, and through it the client, open */
    rlua_setlink(L, lua_gettop(L) - 1);
    h->lock = shared;
    shared->refs++;
    return h;
}

static rlua_hold *check_hold(lua_State *L) {
    return luaL_checkudata(L, 1, RLUA_HOLD);
}

/* The hold stays open only when the core kept it for a retry (err->hold_kept). */
static rl_status release(rlua_hold *h, rl_error *err) {
    if (!h->open) return RL_OK;
    rl_status st = rl_lock_release(h->lock->core, h->context, err);
    if (st == RL_OK || !err->hold_kept) h->open = 0;
    return st;
}

/* hold:release() -> true | nil, err. Once released, true again. */
static int hold_release(lua_State *L) {
    rl_error err;
    rl_status st = release(check_hold(L), &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, 1);
    return 1;
}

static int hold_is_open(lua_State *L) {
    lua_pushboolean(L, check_hold(L)->open);
    return 1;
}

/* hold:detach(): the hold was handed off (lock:hand_off): closed here without a release. */
static int hold_detach(lua_State *L) {
    check_hold(L)->open = 0;
    return 0;
}

/* Notes, for the logger, that a collected coroutine's hold was released (or could not be):
 * core.take_notes() hands them to redlease/events.lua at the program's next call. */
static void note_collected(lua_State *L, rlua_hold *h, rl_status st, const rl_error *err) {
    size_t len;
    const char *name = rl_lock_name(h->lock->core, &len);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "lock \"");
    luaL_addlstring(&b, name, len);
    char middle[96];
    snprintf(middle, sizeof middle,
             "\": its coroutine (context %llu) was collected while holding it; ",
             (unsigned long long)h->context);
    luaL_addstring(&b, middle);
    if (st == RL_OK) {
        luaL_addstring(&b, "released");
    } else {
        luaL_addstring(&b, "the release failed (");
        luaL_addstring(&b, err->message);
        luaL_addstring(&b, "): it expires by its lease");
    }
    luaL_pushresult(&b);
    rlua_add_note(L);
}

static int hold_gc(lua_State *L) {
    rlua_hold *h = check_hold(L);
    if (h->lock) {
        rl_error err;
        int was_open = h->open;
        rl_status st = release(h, &err); /* a failure: the lease ends it */
        /* a closed client (the state closing, or client:close()) releases nothing: not news */
        if (was_open && st != RL_ERR_CLOSED) note_collected(L, h, st, &err);
        h->open = 0;
        rlua_shared_unref(h->lock);
        h->lock = NULL;
    }
    return 0;
}

void rlua_hold_register(lua_State *L) {
    static const luaL_Reg methods[] = {{"release", hold_release},
                                       {"is_open", hold_is_open},
                                       {"detach", hold_detach},
                                       {NULL, NULL}};
    rlua_register_type(L, RLUA_HOLD, methods, hold_gc, NULL);
}
