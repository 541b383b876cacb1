/* The client userdata: one rl_client, closed explicitly, by the collector, or with the state. */
#include <stdlib.h>
#include <string.h>

#include "binding.h"

static void unlink_client(rlua_client *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (c->module && c->module->open == c)
        c->module->open = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Stops the client's threads (joined before this returns) and closes its connections. Holds are
 * not released: they expire by their lease. */
void rlua_client_close(rlua_client *c) {
    if (!c->core) return;
    unlink_client(c);
    rl_client_free(c->core);
    c->core = NULL;
}

static rlua_client *check_client(lua_State *L) {
    return luaL_checkudata(L, 1, RLUA_CLIENT);
}

/* An optional duration in ms; nil keeps the core's default. */
static void opt_ms(lua_State *L, int arg, int64_t *out) {
    if (!lua_isnoneornil(L, arg)) *out = rlua_check_ms(L, arg);
}

/* A string field of the table at `idx` (checked by the Lua side), or NULL; the table keeps it. */
static const char *opt_string(lua_State *L, int idx, const char *name) {
    lua_getfield(L, idx, name);
    const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    return s;
}

/* The TLS, Sentinel, hand-over and drift options in the table at `idx` (nil: none; checked, and the
 * durations made ms, by the Lua side). */
static void table_options(lua_State *L, int idx, rl_options *o) {
    if (!lua_istable(L, idx)) return;
    lua_getfield(L, idx, "handover_grace");
    if (lua_isnumber(L, -1)) o->handover_grace_ms = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, idx, "drift_factor"); /* parts per million */
    if (lua_isnumber(L, -1)) o->drift_factor_ppm = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
    o->tls_ca_file = opt_string(L, idx, "tls_ca_file");
    o->tls_ca_dir = opt_string(L, idx, "tls_ca_dir");
    o->tls_cert_file = opt_string(L, idx, "tls_cert_file");
    o->tls_key_file = opt_string(L, idx, "tls_key_file");
    o->tls_server_name = opt_string(L, idx, "tls_server_name");
    o->sentinel_user = opt_string(L, idx, "sentinel_user");
    o->sentinel_password = opt_string(L, idx, "sentinel_password");
    lua_getfield(L, idx, "tls_insecure_skip_verify");
    o->tls_insecure_skip_verify = lua_toboolean(L, -1);
    lua_pop(L, 1);
}

/* core.connect(url, watchdog_ms, connect_ms, command_ms, max_hold_ms, sync_replicas,
 * sync_timeout_ms, {tls_*, sentinel_*, handover_grace (ms)}) -> client | nil, err (a bad URL or bad
 * TLS option is "argument: ...", raised by the Lua side). Connects lazily: the first call that
 * needs Redis opens the connection. */
int rlua_client_connect(lua_State *L) {
    const char *url = luaL_checkstring(L, 1);
    rl_options o;
    rl_options_init(&o);
    opt_ms(L, 2, &o.watchdog_timeout_ms);
    opt_ms(L, 3, &o.connect_timeout_ms);
    opt_ms(L, 4, &o.command_timeout_ms);
    opt_ms(L, 5, &o.max_hold_ms);
    if (!lua_isnoneornil(L, 6)) {
        lua_Number n = luaL_checknumber(L, 6);
        luaL_argcheck(L, n >= 0 && n <= 1000 && (lua_Number)(int)n == n, 6, "0 to 1000 expected");
        o.sync_replicas = (int)n;
    }
    opt_ms(L, 7, &o.sync_timeout_ms);
    table_options(L, 8, &o);
    rlua_module *m = rlua_module_get(L);
    rlua_client *c = lua_newuserdata(L, sizeof *c);
    memset(c, 0, sizeof *c);
    luaL_getmetatable(L, RLUA_CLIENT);
    lua_setmetatable(L, -2);
    rl_error err;
    rl_status st = rl_client_new(url, &o, &c->core, &err);
    if (st != RL_OK) return rlua_fail(L, st, &err);
    c->module = m; /* nothing between rl_client_new and this can raise */
    c->next = m->open;
    if (m->open) m->open->prev = c;
    m->open = c;
    return 1;
}

static int client_close(lua_State *L) {
    rlua_client_close(check_client(L));
    return 0;
}

static int client_closed(lua_State *L) {
    lua_pushboolean(L, check_client(L)->core == NULL);
    return 1;
}

static int client_id(lua_State *L) {
    rlua_client *c = check_client(L);
    if (!c->core) return luaL_error(L, "closed: the client is closed");
    lua_pushstring(L, rl_client_id(c->core));
    return 1;
}

/* client:lock(name[, kind]) -> lock userdata, linked to the client so that the client outlives
 * it. kind: "lock" (default), "fenced", "fair", "read", "write". */
static int client_lock(lua_State *L) {
    static const char *const kinds[] = {"lock", "fenced", "fair", "read", "write", NULL};
    static const rl_lock_kind kind_of[] = {RL_LOCK_REENTRANT, RL_LOCK_FENCED, RL_LOCK_FAIR,
                                           RL_LOCK_READ, RL_LOCK_WRITE};
    rlua_client *c = check_client(L);
    size_t len;
    const char *name = luaL_checklstring(L, 2, &len);
    rl_lock_kind kind = kind_of[luaL_checkoption(L, 3, "lock", kinds)];
    if (!c->core) return luaL_error(L, "closed: the client is closed");
    rlua_lock *l = rlua_newud(L, sizeof *l);
    l->shared = NULL;
    luaL_getmetatable(L, RLUA_LOCK);
    lua_setmetatable(L, -2);
    int idx = lua_gettop(L);
    lua_pushvalue(L, 1);
    rlua_setlink(L, idx);
    rlua_shared_lock *shared = malloc(sizeof *shared);
    if (!shared) return luaL_error(L, "memory: out of memory");
    rl_error err;
    rl_status st = rl_lock_new_kind(c->core, kind, name, len, &shared->core, &err);
    if (st != RL_OK) {
        free(shared);
        if (st == RL_ERR_ARGUMENT) return luaL_argerror(L, 2, err.message);
        rlua_push_error(L, st, &err);
        return lua_error(L);
    }
    shared->refs = 1;
    l->shared = shared;
    return 1;
}

static int client_tostring(lua_State *L) {
    rlua_client *c = check_client(L);
    if (c->core)
        lua_pushfstring(L, "redlease.client %s %s", rl_client_url(c->core), rl_client_id(c->core));
    else
        lua_pushliteral(L, "redlease.client (closed)");
    return 1;
}

void rlua_client_register(lua_State *L) {
    static const luaL_Reg methods[] = {{"close", client_close},
                                       {"closed", client_closed},
                                       {"id", client_id},
                                       {"lock", client_lock},
                                       {"inspect", rlua_client_inspect},
                                       {"stats", rlua_client_stats},
                                       {NULL, NULL}};
    rlua_register_type(L, RLUA_CLIENT, methods, client_close, client_tostring);
}
