-- The test app's handlers (tests/openresty): each location of the suite's nginx.conf calls one of
-- these. Answers are "key=value" lines, read by the Python side (nginx.py, test_*.py).
local redlease = require "redlease"

local app = {}
local var = ngx.var

function app.init(url, opts)
  app.client = assert(redlease.connect(url, opts))
end

local function num(name, default)
  local v = var["arg_" .. name]
  if v == nil or v == "" then return default end
  if v == "huge" then return math.huge end
  return tonumber(v)
end

local function lock_of(client)
  local kind, name = var.arg_kind or "lock", var.arg_name
  if kind == "read" or kind == "write" then return client:rw_lock(name)[kind] end
  if kind == "fenced" then return client:fenced_lock(name) end
  if kind == "fair" then return client:fair_lock(name) end
  return client:lock(name)
end
app.lock_of = lock_of

local function out(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do ngx.say(k, "=", tostring(t[k])) end
end
app.out = out

-- /hold?name=&secs=&timeout=&lease=&kind=: acquire, keep it `secs`, release; times in epoch s.
function app.hold()
  local l = lock_of(app.client)
  local t0 = ngx.now()
  local g, err = l:acquire { timeout = num("timeout"), lease = num("lease") }
  ngx.update_time()
  if not g then return out { acquired = false, err = err, waited = ngx.now() - t0 } end
  local got = ngx.now()
  local secs = num("secs", 0)
  if secs > 0 then ngx.sleep(secs) end
  local lost, reason = l:lost()
  ngx.update_time()
  local left = ngx.now()
  local ok, rerr = g:release()
  out { acquired = true, got = got, left = left, waited = got - t0, released = ok,
    release_err = rerr, lost = lost, reason = reason, token = g.token }
end

-- /cycle?name=: one acquire and release.
function app.cycle()
  local l = lock_of(app.client)
  local g, err = l:acquire { timeout = num("timeout"), lease = num("lease") }
  if not g then return out { ok = false, err = err } end
  local ok, rerr = g:release()
  out { ok = ok, err = rerr }
end

-- /stats: this worker's client counters.
function app.stats()
  local s = app.client:stats()
  s.pid = ngx.worker.pid()
  s.id = app.client:id()
  out(s)
end

return app
