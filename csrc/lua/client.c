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

/* core.connect(url, options) -> client | nil, err. `options`: by the catalogue's names, checked
 * and converted by redlease.args (durations in ms, fractions in parts per million); a value the
 * core refuses is "argument: <option> must ...", named by the Lua side. Connects lazily: the first
 * call that needs Redis opens the connection. */
int rlua_client_connect(lua_State *L) {
    const char *url = luaL_checkstring(L, 1);
    rl_options o;
    rl_options_init(&o);
    rlua_read_options(L, 2, &o);
    o.queue_events = 1; /* Lua is called on its own thread only: redlease/events.lua takes them */
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

/* Where push_event puts the events: a list made on the first one, so that the usual call, with
 * nothing waiting, allocates nothing. */
typedef struct event_list {
    lua_State *L;
    int made;
} event_list;

/* One event as a table {kind=, name=, context=, reason=, holds=, message=} appended to the list.
 * A memory error raised here loses the event being converted. */
static void push_event(const rl_event *ev, void *userdata) {
    static const char *const kinds[] = {"",          "lost",        "renew_failed",
                                        "renewed",   "sync_failed", "stray_holds",
                                        "abandoned", "in_doubt",    "confirmed"};
    event_list *list = userdata;
    lua_State *L = list->L;
    if (!list->made) {
        lua_newtable(L);
        list->made = 1;
    }
    lua_createtable(L, 0, 6);
    lua_pushstring(L, (unsigned)ev->kind < sizeof kinds / sizeof *kinds ? kinds[ev->kind] : "?");
    lua_setfield(L, -2, "kind");
    if (ev->name) {
        lua_pushlstring(L, ev->name, ev->name_len);
        lua_setfield(L, -2, "name");
    }
    lua_pushnumber(L, (lua_Number)ev->context);
    lua_setfield(L, -2, "context");
    if (ev->reason != RL_LOST_NONE) {
        lua_pushstring(L, rl_lost_reason_name(ev->reason));
        lua_setfield(L, -2, "reason");
    }
    lua_pushnumber(L, (lua_Number)ev->holds);
    lua_setfield(L, -2, "holds");
    lua_pushstring(L, ev->message);
    lua_setfield(L, -2, "message");
    lua_rawseti(L, -2, (int)rlua_rawlen(L, -2) + 1);
}

/* client:_events() -> the events queued since the last call, oldest first, as a list; nil when
 * there are none (or the client is closed). The core queues them (queue_events): the watchdog's
 * and the event threads never call into Lua. */
static int client_events(lua_State *L) {
    rlua_client *c = check_client(L);
    event_list list = {L, 0};
    if (c->core) rl_client_take_events(c->core, push_event, &list);
    return list.made;
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
                                       {"fenced_set", rlua_client_fenced_set},
                                       {"_events", client_events},
                                       {NULL, NULL}};
    rlua_register_type(L, RLUA_CLIENT, methods, client_close, client_tostring);
}
