/* The Lua binding's private declarations: the userdata types, the per-state module record and
 * the helpers its files share. Lock logic lives in the core; this layer only converts. */
#ifndef RLUA_BINDING_H
#define RLUA_BINDING_H

#include <stdint.h>

#include "compat.h"
#include "redlease.h"

#define RLUA_CLIENT "redlease.client"
#define RLUA_LOCK "redlease.lock"
#define RLUA_HOLD "redlease.hold"

/* A client userdata. Open clients are on their state's list, so that closing the state can
 * stop their threads before the module is unloaded. */
typedef struct rlua_client {
    rl_client *core; /* NULL once closed */
    struct rlua_client *prev, *next;
    struct rlua_module *module;
} rlua_client;

/* A core lock shared by its lock userdata and the holds taken through it: whichever finalizer
 * runs last frees it, whatever order the collector picks. */
typedef struct rlua_shared_lock {
    rl_lock *core;
    int refs;
} rlua_shared_lock;

typedef struct rlua_lock {
    rlua_shared_lock *shared; /* NULL once collected */
} rlua_lock;

/* One hold, taken by one acquire for the coroutine that called it; the Lua-side guard wraps it.
 * Its finalizer is the guard's safety net (Lua 5.1 finalizes only userdata). */
typedef struct rlua_hold {
    rlua_shared_lock *lock;
    uint64_t context;
    int open; /* acquired and not yet released through this hold */
} rlua_hold;

/* Per Lua state, in the registry: the open clients and the last coroutine id given out. */
typedef struct rlua_module {
    rlua_client *open;
    uint64_t last_context;
} rlua_module;

rlua_module *rlua_module_get(lua_State *L);
/* The id of the running coroutine: unique for the life of the state, never reused. */
uint64_t rlua_context(lua_State *L);
/* Called after every hold is taken, so that the sentinel stays the newest finalizable object:
 * finalizers run newest first when the state closes, so it runs before any hold's. */
void rlua_renew_sentinel(lua_State *L);

/* Pops a string and keeps it for core.take_notes() (a warning for the logger). */
void rlua_add_note(lua_State *L);

/* Pushes nil and "<code>: <message>"; returns 2 (the usual failure return). */
int rlua_fail(lua_State *L, rl_status status, const rl_error *err);
/* The error string alone, pushed. */
void rlua_push_error(lua_State *L, rl_status status, const rl_error *err);

void rlua_client_close(rlua_client *client);
void rlua_shared_unref(rlua_shared_lock *shared);

/* Registers each type's metatable; lua_CFunction constructors for the module table. */
/* A userdata type: metatable `name` with `methods` as __index, `gc` as __gc and `tostring` as
 * __tostring (each may be NULL). */
void rlua_register_type(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                        lua_CFunction tostring);
void rlua_client_register(lua_State *L);
void rlua_lock_register(lua_State *L);
void rlua_hold_register(lua_State *L);
int rlua_client_connect(lua_State *L);
/* The core's options catalogue as a Lua list of rows (core.options). */
void rlua_push_options(lua_State *L);
/* The checked options in the table at `idx` into `o` (nil: the defaults). */
void rlua_read_options(lua_State *L, int idx, rl_options *o);
/* Pushes a hold, not yet open, for an acquire about to be made through the lock userdata at
 * lock_idx. Made before the acquire so that no allocation can fail between the acquire and it. */
rlua_hold *rlua_hold_new(lua_State *L, int lock_idx, rlua_shared_lock *shared);
/* Converts a number argument that the Lua side has already checked to whole milliseconds. */
int64_t rlua_check_ms(lua_State *L, int arg);

/* Operating (ops.c): client:inspect/stats, lock:extend/reacquire/hand_off/release_token. */
int rlua_client_inspect(lua_State *L);
int rlua_client_stats(lua_State *L);
int rlua_client_fenced_set(lua_State *L); /* fencing.c */
int rlua_lock_extend(lua_State *L);
int rlua_lock_reacquire(lua_State *L);
int rlua_lock_release_token(lua_State *L);
int rlua_lock_hand_off(lua_State *L);

/* ---- the lock family beyond locks (family.c, semaphore.c, countdown.c, multilock.c) -------- */

#define RLUA_SEMAPHORE "redlease.semaphore"
#define RLUA_EXPIRABLE "redlease.permit_semaphore"
#define RLUA_COUNTDOWN "redlease.countdown"
#define RLUA_MULTILOCK "redlease.multilock"

/* A wait that gives up when a debug hook appears (Ctrl-C in lua.c and luajit), as lock
 * acquires do: start it, then pass rlua_wait_hook and it to the core call. */
typedef struct rlua_wait {
    lua_State *threads[2];
    lua_Hook hooks[2];
    int masks[2];
} rlua_wait;
void rlua_wait_start(rlua_wait *w, lua_State *L);
int rlua_wait_hook(void *userdata);

/* The open core client of the client userdata at arg (raises "closed: ..." once closed). */
rl_client *rlua_check_client(lua_State *L, int arg);
/* A whole-number argument (permits, counts), checked by the Lua side already. */
int64_t rlua_check_count(lua_State *L, int arg);
/* Pushes true, or nil and the error (the usual answers of the family's calls). */
int rlua_done(lua_State *L, rl_status status, const rl_error *err);
/* A new userdata of `size` bytes with metatable `type`, linked to the value at link_idx. */
void *rlua_new_object(lua_State *L, size_t size, const char *type, int link_idx);

void rlua_semaphore_register(lua_State *L);
void rlua_countdown_register(lua_State *L);
void rlua_multilock_register(lua_State *L);
/* Sets the family's constructors into the module table on top of the stack. */
void rlua_family_open(lua_State *L);

#endif
