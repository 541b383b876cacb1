/* Operating redlease from Lua: client:inspect(name) and client:stats() as tables, and the
 * fixed-lease and hand-off lock methods. The core does the work (rl_inspect, rl_client_stats,
 * rl_lock_extend, ...); this file only builds tables. */
#include <math.h>

#include "binding.h"

static rl_client *open_client(lua_State *L) {
    rlua_client *c = luaL_checkudata(L, 1, RLUA_CLIENT);
    if (!c->core) luaL_error(L, "closed: the client is closed");
    return c->core;
}

static rl_lock *check_lock(lua_State *L) {
    rlua_lock *l = luaL_checkudata(L, 1, RLUA_LOCK);
    if (!l->shared) luaL_argerror(L, 1, "the lock was finalized");
    return l->shared->core;
}

static void set_integer(lua_State *L, const char *key, int64_t value) {
    lua_pushinteger(L, (lua_Integer)value);
    lua_setfield(L, -2, key);
}

static void set_string(lua_State *L, const char *key, const char *value) {
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

static void set_boolean(lua_State *L, const char *key, int value) {
    lua_pushboolean(L, value);
    lua_setfield(L, -2, key);
}

/* Seconds as Lua numbers: false when there is no key, math.huge without expiry. */
static void set_lease(lua_State *L, const char *key, int64_t ms) {
    if (ms == -2)
        lua_pushboolean(L, 0);
    else
        lua_pushnumber(L, ms == -1 ? HUGE_VAL : (lua_Number)ms / 1000.0);
    lua_setfield(L, -2, key);
}

static void push_owner(lua_State *L, const rl_owner_info *o) {
    lua_createtable(L, 0, 8);
    set_string(L, "field", o->field);
    set_string(L, "client_id", o->client_id);
    set_string(L, "context", o->context);
    set_integer(L, "count", o->count);
    set_lease(L, "lease", o->lease_ms);
    set_boolean(L, "write", o->write);
    set_boolean(L, "local", o->local);
    if (o->name[0]) set_string(L, "name", o->name); /* nil: no connection of it names it */
}

static void push_inspection(lua_State *L, const rl_inspection *in) {
    lua_createtable(L, 0, 9);
    set_string(L, "kind", rl_key_kind_name(in->kind));
    set_string(L, "type", in->type);
    if (in->mode[0]) set_string(L, "mode", in->mode);
    set_lease(L, "lease", in->lease_ms);
    set_integer(L, "count", in->count);
    set_integer(L, "last_token", in->last_token);
    set_integer(L, "subscribers", in->subscribers);
    lua_createtable(L, (int)in->n_owners, 0);
    for (size_t i = 0; i < in->n_owners; i++) {
        push_owner(L, &in->owners[i]);
        lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, "owners");
    lua_createtable(L, (int)in->n_queue, 0);
    for (size_t i = 0; i < in->n_queue; i++) {
        const rl_waiter_info *w = &in->queue[i];
        lua_createtable(L, 0, 5);
        set_string(L, "owner", w->owner);
        set_string(L, "client_id", w->client_id);
        set_string(L, "context", w->context);
        if (w->name[0]) set_string(L, "name", w->name);
        lua_pushnumber(L, (lua_Number)w->timeout_ms / 1000.0);
        lua_setfield(L, -2, "timeout");
        lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, "queue");
}

/* client:inspect(name) -> table | nil, err */
int rlua_client_inspect(lua_State *L) {
    rl_client *c = open_client(L);
    size_t len;
    const char *name = luaL_checklstring(L, 2, &len);
    luaL_argcheck(L, len > 0, 2, "a name must not be empty");
    rl_inspection *in = NULL;
    rl_error err;
    rl_status st = rl_inspect(c, name, len, &in, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    push_inspection(L, in);
    rl_inspection_free(in);
    return 1;
}

/* client:stats() -> table of counters (no round trip) */
int rlua_client_stats(lua_State *L) {
    rl_client *c = open_client(L);
    rl_stats s;
    rl_client_stats(c, &s);
    lua_createtable(L, 0, 16);
    set_integer(L, "acquisitions", (int64_t)s.acquisitions);
    set_integer(L, "waits", (int64_t)s.waits);
    lua_pushnumber(L, (lua_Number)s.wait_total_us / 1e6);
    lua_setfield(L, -2, "wait_seconds_total");
    lua_pushnumber(L, (lua_Number)s.wait_max_us / 1e6);
    lua_setfield(L, -2, "wait_seconds_max");
    set_integer(L, "lost_total", (int64_t)s.lost_total);
    lua_createtable(L, 0, RL_LOST_REASON_COUNT);
    for (int r = 1; r < RL_LOST_REASON_COUNT; r++)
        set_integer(L, rl_lost_reason_name((rl_lost_reason)r), (int64_t)s.lost[r]);
    lua_setfield(L, -2, "lost");
    set_integer(L, "holds", (int64_t)s.holds);
    set_integer(L, "waiters", (int64_t)s.waiters);
    set_integer(L, "renew_rounds", (int64_t)s.renew_rounds);
    set_integer(L, "renew_failed_rounds", (int64_t)s.renew_failed_rounds);
    set_integer(L, "renewed_holds", (int64_t)s.renewed_holds);
    set_boolean(L, "watchdog_running", s.watchdog_running);
    set_integer(L, "subscriptions", (int64_t)s.subscriptions);
    set_integer(L, "in_doubt", (int64_t)s.in_doubt);
    set_integer(L, "in_doubt_total", (int64_t)s.in_doubt_total);
    set_integer(L, "server_changes", (int64_t)s.server_changes);
    set_integer(L, "master_changes", (int64_t)s.master_changes);
    set_integer(L, "sync_waits", (int64_t)s.sync_waits);
    set_integer(L, "sync_acks", (int64_t)s.sync_acks);
    set_integer(L, "sync_skipped", (int64_t)s.sync_skipped);
    set_integer(L, "woken_acquires", (int64_t)s.woken_acquires);
    return 1;
}

/* lock:extend(add_ms, replace) -> true | nil, err */
int rlua_lock_extend(lua_State *L) {
    rl_lock *lock = check_lock(L);
    int64_t ms = rlua_check_ms(L, 2);
    int replace = lua_toboolean(L, 3);
    rl_error err;
    rl_status st = rl_lock_extend(lock, rlua_context(L), ms, replace, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* lock:reacquire() -> true | nil, err */
int rlua_lock_reacquire(lua_State *L) {
    rl_lock *lock = check_lock(L);
    rl_error err;
    rl_status st = rl_lock_reacquire(lock, rlua_context(L), &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, 1);
    return 1;
}

/* lock:hand_off() -> token | nil, err: the running coroutine's hold, let go of here. */
int rlua_lock_hand_off(lua_State *L) {
    rl_lock *lock = check_lock(L);
    char token[RL_TOKEN_MAX];
    rl_error err;
    rl_status st = rl_lock_hand_off(lock, rlua_context(L), token, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushstring(L, token);
    return 1;
}

/* lock:release_token(token) -> true | nil, err: every hold of the token's owner. */
int rlua_lock_release_token(lua_State *L) {
    rl_lock *lock = check_lock(L);
    const char *token = luaL_checkstring(L, 2);
    rl_error err;
    rl_status st = rl_lock_release_token(lock, token, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    lua_pushboolean(L, 1);
    return 1;
}
