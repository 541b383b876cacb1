-- Lua acquire+release cycles per second on one connection, as bench/c/bench_core.c measures the
-- core: fixed lease, watchdog mode, and lock:with.
-- Usage: <lua> cycles.lua REDIS_URL [cycles] [json]
-- With "json", prints one JSON object (for bench/run.py) instead of the text lines.
local redlease = require "redlease"
local system = require "system"

local url = arg[1] or os.getenv("REDIS_URL") or "redis://127.0.0.1:6379"
local cycles = tonumber(arg[2]) or 20000
local client = assert(redlease.connect(url))
local lock = client:lock("bench:lua-cycle")

local function rate(n, one)
  local t0 = system.monotime()
  for _ = 1, n do one() end
  return n / (system.monotime() - t0)
end

local function fixed() assert(lock:acquire({ timeout = 0, lease = 10 })):release() end
local function watchdog() assert(lock:acquire({ timeout = 0 })):release() end
local function nothing() end
local function with() lock:with(nothing, { timeout = 0 }) end

rate(200, fixed) -- warm up: connection and script load
local label = rawget(_G, "jit") and jit.version or _VERSION
if arg[3] == "json" then
  local f, w, l = rate(cycles, fixed), rate(cycles, watchdog), rate(cycles, with)
  print(('{"measure": "lua", "interpreter": "%s", "cycles": %d, "rows": [' ..
    '{"impl": "lua-fixed", "label": "%s, fixed lease", "cycles_per_s": %.1f}, ' ..
    '{"impl": "lua", "label": "%s, watchdog", "cycles_per_s": %.1f}, ' ..
    '{"impl": "lua-with", "label": "%s, lock:with (watchdog)", "cycles_per_s": %.1f}]}')
    :format(label, cycles, label, f, label, w, label, l))
else
  local function show(what, one)
    print(("%-18s %-40s %8.0f"):format(label, what, rate(cycles, one)))
  end
  show("acquire+release cycles/s, fixed lease:", fixed)
  show("acquire+release cycles/s, watchdog mode:", watchdog)
  show("lock:with cycles/s, watchdog mode:", with)
end
client:close()
