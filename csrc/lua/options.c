/* The core's options catalogue for Lua: core.options lists its rows (redlease.args checks users'
 * options against them), and core.connect reads the checked options by the same rows. */
#include "binding.h"

static void set_number(lua_State *L, const char *field, int64_t v) {
    lua_pushnumber(L, (lua_Number)v);
    lua_setfield(L, -2, field);
}

static void set_flag(lua_State *L, const char *field, int on) {
    lua_pushboolean(L, on);
    lua_setfield(L, -2, field);
}

/* {{name=, kind=, default=, min=, max= (nil: none), zero_none=, internal=, bounds=}, ...} */
void rlua_push_options(lua_State *L) {
    const rl_option_info *row;
    lua_newtable(L);
    for (int i = 0; (row = rl_option_at(i)); i++) {
        char bounds[96];
        lua_newtable(L);
        lua_pushstring(L, row->name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, rl_option_kind_name(row->kind));
        lua_setfield(L, -2, "kind");
        if (row->kind == RL_OPTION_MS || row->kind == RL_OPTION_COUNT ||
            row->kind == RL_OPTION_PPM) {
            set_number(L, "default", row->def);
            set_number(L, "min", row->min);
            if (row->max != RL_OPTION_NO_MAX) set_number(L, "max", row->max);
            rl_option_bounds(row, bounds, sizeof bounds);
            lua_pushstring(L, bounds);
            lua_setfield(L, -2, "bounds");
        }
        set_flag(L, "zero_none", (row->flags & RL_OPTION_ZERO_NONE) != 0);
        set_flag(L, "internal", (row->flags & RL_OPTION_INTERNAL) != 0);
        lua_rawseti(L, -2, i + 1);
    }
}

/* The options in the table at `idx` (checked by redlease.args: numbers in the field's unit,
 * strings, booleans; nil: the default) into `o`. The table keeps the strings alive. */
void rlua_read_options(lua_State *L, int idx, rl_options *o) {
    const rl_option_info *row;
    if (!lua_istable(L, idx)) return;
    for (int i = 0; (row = rl_option_at(i)); i++) {
        if (row->flags & RL_OPTION_INTERNAL) continue;
        lua_getfield(L, idx, row->name);
        if (row->kind == RL_OPTION_TEXT || row->kind == RL_OPTION_PATH) {
            if (lua_type(L, -1) == LUA_TSTRING) rl_option_set_text(o, row, lua_tostring(L, -1));
        } else if (row->kind == RL_OPTION_FLAG) {
            if (!lua_isnil(L, -1)) rl_option_set(o, row, lua_toboolean(L, -1));
        } else if (lua_type(L, -1) == LUA_TNUMBER) {
            rl_option_set(o, row, (int64_t)lua_tonumber(L, -1));
        }
        lua_pop(L, 1);
    }
}
