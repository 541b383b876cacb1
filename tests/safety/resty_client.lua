-- luacheck: std max+ngx_lua
-- One OpenResty client node of a safety run: the rock's OpenResty backend (`redlease` inside
-- nginx, on cosockets) in an nginx started by run.py with `master_process off` (the process it
-- starts is the one worker, so the run's SIGSTOP, kill and parent-death signal reach it). Each
-- request to /cycle?k=K is one cycle of owner K (run.py's driver sends them one after another
-- per owner, several owners at once): acquire, hold, release, logged as history.py's events on
-- CLOCK_MONOTONIC in ns (LuaJIT's FFI; the clock of every other process). Mutex workload only:
-- no PostgreSQL driver on cosockets is packaged by Debian, and a blocking one would stall the
-- worker. The backend has no on_lost hook yet (docs/openresty.md): a loss is learned by
-- lock:lost() while holding, or by the release's answer, and logged then.

local ffi = require "ffi"
local redlease = require "redlease"

ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } rl_safety_timespec;
int clock_gettime(int clock, rl_safety_timespec *ts);
]]
local ts = ffi.new("rl_safety_timespec")
local CLOCK_MONOTONIC = 1

local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1000000000 + tonumber(ts.tv_nsec)
end

local M = {}
local cfg, client, out

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

-- JSON of a flat event; numbers here are all whole (times in ns, tokens).
local function log(kind, fields)
  local parts = { '"kind": ' .. quote(kind) }
  for k, v in pairs(fields) do
    local s
    if type(v) == "number" then
      s = string.format("%d", v)
    elseif type(v) == "boolean" then
      s = tostring(v)
    else
      s = quote(tostring(v))
    end
    parts[#parts + 1] = quote(k) .. ": " .. s
  end
  out:write("{" .. table.concat(parts, ", ") .. "}\n")
end

local function code_word(err)
  return tostring(err):match("^(%w+):") or tostring(err)
end

-- init_worker_by_lua: the configuration (a Lua chunk run.py wrote), the client, the hello.
function M.init(path)
  cfg = dofile(path)
  out = assert(io.open(cfg.out, "a"))
  out:setvbuf("no") -- one write per line
  client = redlease.connect(cfg.url, cfg.options)
  log("hello", { proc = cfg.proc, client_id = client:id(), pid = ngx.worker.pid(),
    lang = "openresty" })
end

-- content_by_lua: one cycle of owner k (its lock from cfg.owners).
function M.cycle()
  local k = tonumber(ngx.var.arg_k)
  local name = cfg.owners[k + 1][2]
  local owner = "r" .. k
  local lock = client:lock(name)
  local t0 = now()
  local guard, err = lock:acquire({ timeout = cfg.acquire_timeout })
  local t1 = now()
  local failed = err and code_word(err) ~= "timeout"
  log("acquire", { proc = cfg.proc, owner = owner, lock = name, start = t0, ["end"] = t1,
    ok = guard ~= nil, error = failed and code_word(err) or nil,
    detail = failed and tostring(err):sub(1, 200) or nil })
  if guard then
    local span = cfg.hold_ms[1] + (cfg.hold_ms[2] - cfg.hold_ms[1]) * math.random()
    local hold_until = t1 + span * 1e6
    local doubting = false
    while now() < hold_until do
      local lost, reason = lock:lost()
      if lost then
        log("lost", { proc = cfg.proc, owner = owner, lock = name, t = now(), reason = reason })
        break
      end
      -- the backend's on_state is a [warn] line: the holder sees a change by asking
      if lock:in_doubt() ~= doubting then
        doubting = not doubting
        log("state", { proc = cfg.proc, owner = owner, lock = name, t = now(),
          state = doubting and "in_doubt" or "held" })
      end
      ngx.sleep(0.005)
    end
    local t2 = now()
    local ok, rerr = guard:release()
    local reason, error_, detail
    if not ok then
      if code_word(rerr) == "lost" then
        reason = tostring(rerr):match("%(([%w_]+)%)%s*$") or "lost"
      else
        error_, detail = code_word(rerr), tostring(rerr):sub(1, 200)
      end
    end
    log("release", { proc = cfg.proc, owner = owner, lock = name, start = t2, ["end"] = now(),
      ok = ok == true, reason = reason, error = error_, detail = detail })
  end
  ngx.say(guard and "held" or "not held")
end

return M
