-- luacheck's settings for the Lua code (make test-luacheck, mk/lint.mk).
std = "max" -- the rock runs under Lua 5.4 and LuaJIT (5.1): the globals of every version
max_line_length = 100 -- the project's width, as .clang-format and ruff

-- busted's globals (describe, it, assert.equal, ...) in the specs and the files they load
files["tests/lua"] = {std = "+busted"}
-- a `<close>` guard is used by being closed at the end of its scope
files["tests/lua/close54.lua"] = {ignore = {"211/guard"}}
-- the OpenResty backend, its tests, example and benchmark run inside nginx (lua-nginx-module)
for _, dir in ipairs { "luarocks/redlease/resty", "tests/openresty", "examples/openresty",
  "bench/openresty" } do
  files[dir] = { std = "max+ngx_lua" }
end
-- generated from the C core's script texts (tools/gen_resty_scripts.c): each script line is one
-- Lua string, whatever its length
files["luarocks/redlease/resty/scripts.lua"] = { max_line_length = false }
