-- The test app's handlers (tests/openresty): each location of the suite's nginx.conf calls one of
-- these. Answers are "key=value" lines, read by the Python side (nginx.py, test_*.py).
local redlease = require "redlease"

local app = {}
local var = ngx.var

function app.init(url, opts)
  app.url = url
  app.client = assert(redlease.connect(url, opts))
  -- the internal client, for raw Redis commands through the backend's runner
  app.core = require("redlease.resty.client").of(app.client)
end

local function num(name, default)
  local v = var["arg_" .. name]
  if v == nil or v == "" then return default end
  if v == "huge" then return math.huge end
  return tonumber(v)
end

local function lock_of(client)
  local kind, name = var.arg_kind or "lock", ngx.unescape_uri(var.arg_name)
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
  local max_hold = num("max_hold")
  local g, err = l:acquire { timeout = num("timeout"), lease = num("lease"), max_hold = max_hold }
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

-- /sequence?name=: the interop suite's wire sequence (tests/interop/test_wire.py).
function app.sequence()
  local l = lock_of(app.client)
  local steps = {}
  local function step(v, err)
    steps[#steps + 1] = tostring(v) .. (err and ("(" .. err .. ")") or "")
  end
  local g1 = l:acquire { timeout = 0, lease = 10 }
  local g2 = l:acquire { timeout = 0, lease = 10 }
  step(g1 and g2 and true)
  step(l:release())
  step(l:release())
  step(l:acquire { timeout = 0 } and true)
  step(l:force_unlock())
  step(l:force_unlock())
  out { steps = table.concat(steps, ",") }
end

-- /api?name=: the lock API within one request, each check a "name=value" line.
function app.api()
  local c = app.client
  local name = ngx.unescape_uri(var.arg_name)
  local l = c:lock(name)
  local r = {}
  local g1 = assert(l:acquire { timeout = 0 })
  local g2 = assert(l:acquire { timeout = 0 }) -- the same run re-enters
  r.hold_count = l:hold_count()
  r.held = l:held()
  r.locked = l:locked()
  local rem = l:remaining()
  r.remaining_ok = rem > 0 and rem <= 1.5
  -- a light thread is an owner of its own: it cannot take it, nor release it
  local t = ngx.thread.spawn(function()
    local g, err = l:acquire { timeout = 0 }
    local ok, rerr = l:release()
    return (g and "acquired" or err:match("^(%w+):")) .. ","
      .. (ok and "released" or rerr:match("^([%w_]+):"))
  end)
  r.thread = select(2, ngx.thread.wait(t))
  r.release1 = g2:release()
  r.release1_again = g2:release() -- idempotent
  r.released_flag = g2:released()
  r.count_after = l:hold_count()
  r.release2 = l:release() -- through the newest open guard: g1
  r.g1_released = g1:released()
  local ok, err = l:release()
  r.not_owned = not ok and err:match("^([%w_]+):")
  r.remaining_free = l:remaining()
  -- fenced: strictly increasing tokens, reentrant ones too
  local f = c:fenced_lock(name .. ":fenced")
  local a, b = assert(f:acquire { timeout = 0 }), assert(f:acquire { timeout = 0 })
  r.tokens = a.token < b.token and f:token() == b.token
  b:release(); a:release()
  r.token_after = tostring(f:token())
  -- read/write: two readers of this run and a light thread share; a writer waits
  local rw = c:rw_lock(name .. ":rw")
  local rg = assert(rw.read:acquire { timeout = 0 })
  local t2 = ngx.thread.spawn(function()
    local g = rw.read:acquire { timeout = 0 }
    local w, werr = rw.write:acquire { timeout = 0 }
    if g then g:release() end
    return (g and "read" or "noread") .. "," .. (w and "write" or werr:match("^(%w+):"))
  end)
  r.rw_thread = select(2, ngx.thread.wait(t2))
  r.read_locked = rw.read:locked()
  rg:release()
  -- force unlock: the holder learns its hold was lost
  local victim = assert(l:acquire { timeout = 0, lease = 5 })
  r.forced = l:force_unlock()
  local vok, verr = victim:release()
  r.after_force = not vok and verr:match("^(%w+):") .. ":" .. verr:match("%((%w+)%)$")
  -- with: results, errors re-raised after the release
  r.with_result = l:with(function(x, y) return x + y end, { timeout = 1 }, 2, 3)
  local wok, werr = pcall(l.with, l, function() error("inside") end, { timeout = 1 })
  r.with_error = not wok and tostring(werr):match("inside") ~= nil and not l:locked()
  out(r)
end

-- /critical?name=&n=&key=: n times acquire, enter (INCR key: anything but 1 means someone else
-- is inside: INCR key:overlaps), stay 2 ms, leave (DECR key), release.
-- Fencing (docs/semantics.md): a forced release advances the fence; fenced_set refuses the
-- evicted holder's token once a newer one wrote, and the newer value stands.
function app.fencing()
  local c, name = app.client, ngx.unescape_uri(var.arg_name)
  local f = c:fenced_lock(name)
  local old = assert(f:acquire { timeout = 0, lease = 5 })
  local r = {}
  r.old_write = tostring(c:fenced_set(name .. ":data", "old", old.token))
  r.forced = f:force_unlock()
  old:release() -- answers lost (deleted): the evicted hold is let go of here
  local newer = assert(f:acquire { timeout = 0 })
  r.advanced = newer.token == old.token + 2
  local ok, fence = c:fenced_set(name .. ":data", "newer", newer.token)
  r.newer_write = tostring(ok) .. "," .. tostring(fence == old.token)
  ok, fence = c:fenced_set(name .. ":data", "old, late", old.token)
  r.late_write = tostring(ok) .. "," .. tostring(fence == newer.token)
  newer:release()
  out(r)
end

function app.critical()
  local runner = require "redlease.resty.runner"
  local l = lock_of(app.client)
  local key, done, overlaps = var.arg_key, 0, 0
  for _ = 1, num("n", 1) do
    local g, err = l:acquire { timeout = 60 }
    if not g then return out { done = done, err = err, pid = ngx.worker.pid() } end
    if runner.command(app.core, { "INCR", key }) ~= 1 then
      overlaps = overlaps + 1
      runner.command(app.core, { "INCR", key .. ":overlaps" })
    end
    ngx.sleep(0.002)
    runner.command(app.core, { "DECR", key })
    local ok, rerr = g:release()
    if not ok then return out { done = done, err = rerr, pid = ngx.worker.pid() } end
    done = done + 1
  end
  out { done = done, overlaps = overlaps, pid = ngx.worker.pid() }
end

-- /many?prefix=&n=&secs=: n light threads, each its own owner, hold prefix..i for secs.
function app.many()
  local n, secs, prefix = num("n", 1), num("secs", 1), var.arg_prefix
  local threads = {}
  for i = 1, n do
    threads[i] = ngx.thread.spawn(function()
      local l = app.client:lock(prefix .. i)
      local g, err = l:acquire { timeout = 0 }
      if not g then return "acquire: " .. err end
      ngx.sleep(secs)
      local ok, rerr = g:release()
      return ok and "ok" or "release: " .. rerr
    end)
  end
  local ok_count, first_err = 0, nil
  for i = 1, n do
    local _, r = ngx.thread.wait(threads[i])
    if r == "ok" then ok_count = ok_count + 1 else first_err = first_err or r end
  end
  out { ok = ok_count, err = first_err }
end

-- /leak_error?name=: takes the lock and fails without releasing it.
function app.leak_error()
  local g = assert(lock_of(app.client):acquire { timeout = 0, lease = num("lease") })
  ngx.ctx.guard = g -- reachable from the request only
  error("the handler failed while holding " .. var.arg_name)
end

-- /leak_sleep?name=: takes the lock and sleeps (the client aborts meanwhile).
function app.leak_sleep()
  assert(lock_of(app.client):acquire { timeout = 0 })
  ngx.say("holding")
  ngx.flush(true)
  ngx.sleep(num("secs", 60))
end

-- /afresh?name=&kind=: a re-entry is answered as one; a re-acquire that Redis grants afresh
-- (the key was deleted behind the run's back, and no renewal told it yet: fixed leases) reports
-- the run's hold lost and takes the fresh grant back.
function app.afresh()
  local runner = require "redlease.resty.runner"
  local l = lock_of(app.client)
  local r = {}
  local g1 = assert(l:acquire { timeout = 0, lease = 10 })
  local g2 = assert(l:acquire { timeout = 0, lease = 10 })
  r.count = l:hold_count()
  r.release2 = g2:release()
  runner.command(app.core, { "DEL", l.name })
  local g3, err = l:acquire { timeout = 0, lease = 10 }
  r.afresh = g3 == nil and err:match("^(%w+):") .. ":" .. err:match("%((%w+)%)$")
  local lost, reason = l:lost()
  r.lost = tostring(lost) .. ":" .. tostring(reason)
  r.taken_back = runner.command(app.core, { "EXISTS", l.name }) == 0
  local ok, rerr = g1:release()
  r.release1 = ok or rerr:match("^(%w+):")
  local g4 = l:acquire { timeout = 0, lease = 10 }
  r.again = g4 ~= nil and g4:release()
  out(r)
end

-- /reacquire?name=&grace=: on a client of its own with that handover_grace (seconds), acquire
-- and release, then time a waiting acquire of the same lock (took, seconds) and release it; also
-- what connect says to a grace, and a watchdog timeout, over its bound.
function app.reacquire()
  local client = assert(redlease.connect(app.url, { handover_grace = num("grace") }))
  local l = client:lock(ngx.unescape_uri(var.arg_name))
  assert(assert(l:acquire()):release())
  ngx.update_time()
  local t0 = ngx.now()
  local g, err = l:acquire { timeout = 5 }
  ngx.update_time()
  local took = ngx.now() - t0
  local refused, why = pcall(redlease.connect, app.url, { handover_grace = 2 })
  local refused_lease, why_lease = pcall(redlease.connect, app.url,
    { watchdog_timeout = 2 ^ 41 / 1000 })
  out { acquired = g ~= nil, err = err, took = took, released = g and g:release(),
    over_bound = not refused and why:match("%((.*)%)"),
    lease_over_bound = not refused_lease and why_lease:match("^bad argument '(.-)'") }
  client:close()
end

-- /unsupported: what connect answers to the options the backend cannot honour (replica and
-- append-only file syncs).
function app.unsupported()
  local r = {}
  for _, opts in ipairs({ { sync_replicas = 1 }, { sync_aof = true } }) do
    local option = next(opts)
    local client, err = redlease.connect(app.url, opts)
    r[option] = client and "(accepted)" or err
  end
  out(r)
end

-- /named?name=&as=: on a client of its own named `as` (none: the default), acquire `name` and
-- keep it 0.5 s (the test reads CLIENT LIST meanwhile); also what connect says to bad names.
function app.named()
  local as = var.arg_as
  local client = assert(redlease.connect(app.url, { client_name = as ~= "" and as or nil }))
  local g = assert(client:lock(ngx.unescape_uri(var.arg_name)):acquire())
  ngx.sleep(0.5)
  local spaced_ok, spaced = pcall(redlease.connect, app.url, { client_name = "two words" })
  local long_ok, long = pcall(redlease.connect, app.url, { client_name = ("x"):rep(65) })
  out { id = client:id(), pid = ngx.worker.pid(), released = g:release(),
    spaced = not spaced_ok and spaced:match("^bad argument 'client_name' to 'connect' %((.*)%)$"),
    long = not long_ok and long:match("^bad argument 'client_name' to 'connect' %((.*)%)$") }
  client:close()
end

-- /handover?name=&grace=: on a client of its own with that handover_grace (seconds), this run
-- (A) holds while a light thread (B, another run of the same client) waits; A releases and
-- acquires again at once. order: who had the lock first after the release ("B,A": B was left
-- its turn); took: A's second acquire (seconds); B holds 0.02 s.
function app.handover()
  local client = assert(redlease.connect(app.url, { handover_grace = num("grace") }))
  local l = client:lock(ngx.unescape_uri(var.arg_name))
  local a = assert(l:acquire())
  local order = {}
  local b = ngx.thread.spawn(function()
    local g = assert(l:acquire { timeout = 5 })
    order[#order + 1] = "B"
    ngx.sleep(0.02)
    assert(g:release())
  end)
  ngx.sleep(0.1) -- B is asleep on the channel
  assert(a:release())
  ngx.update_time()
  local t0 = ngx.now()
  local again = assert(l:acquire { timeout = 5 })
  ngx.update_time()
  local took = ngx.now() - t0
  order[#order + 1] = "A"
  assert(again:release())
  assert(ngx.thread.wait(b))
  out { order = table.concat(order, ","), took = took }
  client:close()
end

-- /settle?name=: a release whose reply is lost (Redis stalled by DEBUG SLEEP past a 0.3 s
-- command timeout) is settled by the run's next acquire, with the same request id: the new
-- hold is then counted once by Redis and renewed by the watchdog.
function app.settle()
  local runner = require "redlease.resty.runner"
  local c = assert(redlease.connect(app.url, { command_timeout = 0.3, watchdog_timeout = 1.5 }))
  local l = c:lock(ngx.unescape_uri(var.arg_name))
  local r = {}
  local g1 = assert(l:acquire { timeout = 0 })
  local stall = ngx.thread.spawn(runner.command, app.core, { "DEBUG", "SLEEP", "1" })
  ngx.sleep(0.05) -- the stall is under way
  local ok, err = g1:release()
  r.release = ok or err:match("^(%w+):")
  r.guard_open = not g1:released()
  ngx.thread.wait(stall)
  local g2, aerr = l:acquire { timeout = 0 }
  r.acquired = g2 ~= nil or aerr
  r.settled = g1:released()
  r.count = l:hold_count()
  ngx.sleep(2) -- longer than the 1.5 s lease
  r.lost = l:lost()
  r.renewed = (l:remaining() or 0) > 0
  r.release2 = g2 and g2:release()
  r.gone = not l:locked()
  c:close()
  out(r)
end

-- /stray?name=: Redis counts two holds of this run that it does not know of (as after acquires
-- whose answers were lost): its last release removes them too. The reentrant and the fenced
-- lock of one run share their Redis field: there "still held" is expected and left alone.
function app.stray()
  local runner = require "redlease.resty.runner"
  local owner = require "redlease.resty.owner"
  local c, name = app.core, ngx.unescape_uri(var.arg_name)
  local l, f = app.client:lock(name), app.client:fenced_lock(name)
  local r = {}
  local g = assert(l:acquire { timeout = 0, lease = 10 })
  runner.command(c, { "HINCRBY", name, c:owner_of(owner.run()), "2" })
  r.release = g:release()
  r.gone = runner.command(c, { "EXISTS", name }) == 0
  local a = assert(l:acquire { timeout = 0, lease = 10 })
  local b = assert(f:acquire { timeout = 0, lease = 10 })
  r.shared_release = a:release()
  r.shared_count = l:hold_count()
  r.fenced_release = b:release()
  r.shared_gone = runner.command(c, { "EXISTS", name }) == 0
  out(r)
end

-- /watch_loss?name=&secs=: a watchdog-mode hold, looked at every 20 ms until it is lost (at
-- most secs), then released; lost_after: seconds from the acquire to the loss.
function app.watch_loss()
  local l = lock_of(app.client)
  local g = assert(l:acquire { timeout = 0 })
  ngx.update_time()
  local got = ngx.now()
  local deadline = got + num("secs", 5)
  local lost, reason = l:lost()
  while not lost and ngx.now() < deadline do
    ngx.sleep(0.02)
    ngx.update_time()
    lost, reason = l:lost()
  end
  local lost_after = ngx.now() - got
  local ok, err = g:release()
  out { lost = lost, reason = reason, lost_after = lost_after,
    release = ok or err:match("^(%w+):") }
end

-- /wait_exit?name=: waits on the lock while another light thread ends the request with
-- ngx.exit after 0.3 s (the waiter never resumes).
function app.wait_exit()
  ngx.thread.spawn(function()
    ngx.sleep(0.3)
    ngx.exit(204)
  end)
  lock_of(app.client):acquire { timeout = 60 }
  ngx.say("not reached")
end

-- /wait_kill?name=: a light thread waits on the lock; the request kills it after 0.3 s and
-- answers "killed=true".
function app.wait_kill()
  local t = ngx.thread.spawn(function()
    lock_of(app.client):acquire { timeout = 60 }
  end)
  ngx.sleep(0.3)
  out { killed = ngx.thread.kill(t) and true }
end

-- /tls?url=&name=&<option>=: connect with those tls_* options (server_name, skip, cert, key,
-- ca_file, ca_dir: escaped values) and command_timeout, then a one-try acquire and its release;
-- a woken wait too when wait=1 (a light thread holds 0.2 s while this run waits: the
-- subscriber's connection is TLS too). connect_err: what connect raised.
function app.tls()
  local opts = {}
  local names = { server_name = "tls_server_name", cert = "tls_cert_file", key = "tls_key_file",
    ca_file = "tls_ca_file", ca_dir = "tls_ca_dir" }
  for arg, option in pairs(names) do
    local v = var["arg_" .. arg]
    if v then opts[option] = ngx.unescape_uri(v) end
  end
  if var.arg_skip then opts.tls_insecure_skip_verify = var.arg_skip == "1" end
  opts.command_timeout = num("command_timeout")
  local ok, client = pcall(redlease.connect, ngx.unescape_uri(var.arg_url), opts)
  if not ok then return out { connect_err = client } end
  local l = client:lock(ngx.unescape_uri(var.arg_name))
  local g, err = l:acquire { timeout = 0 }
  local r = { acquired = g ~= nil, err = err, released = g and g:release() }
  if g and var.arg_wait == "1" then
    local holder = assert(l:acquire { timeout = 0 })
    local t = ngx.thread.spawn(function()
      local w, werr = l:acquire { timeout = 5 }
      return w and w:release() or werr
    end)
    ngx.sleep(0.2)
    holder:release()
    r.woken = select(2, ngx.thread.wait(t))
  end
  client:close()
  out(r)
end

-- /lost_retry?name=&kind=&secs=: a one-try acquire whose answer is lost (the test stalls Redis),
-- then `secs` later the same run acquires again (waiting up to 5 s): the taking back of the lost
-- acquire never takes the new hold with it.
function app.lost_retry()
  local runner = require "redlease.resty.runner"
  local l = lock_of(app.client)
  local r = {}
  local g, err = l:acquire { timeout = 0 }
  r.first = g and "acquired" or err:match("^(%w+):")
  ngx.sleep(num("secs", 0.2))
  local g2, err2 = l:acquire { timeout = 5 }
  r.second = g2 and "acquired" or err2
  ngx.sleep(0.5) -- a late undo would strike now
  r.count = l:hold_count()
  r.release = g2 and g2:release()
  r.gone = runner.command(app.core, { "EXISTS", l.name }) == 0
  out(r)
end

-- /ops?name=: extend, reacquire, hand_off and release_token within one request, as the rock's
-- tests/lua/ops_spec.lua checks them.
function app.ops()
  local runner = require "redlease.resty.runner"
  local function raw(...) return runner.command(app.core, { ... }) end
  local function word(_, err) return err and err:match("^([%w_]+):") end
  local name = ngx.unescape_uri(var.arg_name)
  local l = app.client:lock(name)
  local r = {}
  r.extend_none = word(l:extend(1))
  local g = assert(l:acquire { timeout = 0, lease = 5 })
  r.extend = l:extend(20)
  local pttl = raw("PTTL", name)
  r.extended = pttl > 23000 and pttl <= 25000
  r.replace = l:extend(2, { replace = true })
  r.replaced = raw("PTTL", name) <= 2000
  r.reacquire = l:reacquire()
  r.reacquired = raw("PTTL", name) > 4000
  r.zero_raises = not pcall(l.extend, l, 0)
  r.release = g:release()
  g = assert(l:acquire { timeout = 0 })
  r.dog = select(2, l:extend(5)):match("^argument: .*watchdog") ~= nil
  r.dog_reacquire = select(2, l:reacquire()):match("watchdog") ~= nil
  g:release()
  g = assert(l:acquire { timeout = 0, lease = 5 })
  raw("DEL", name)
  r.revive = word(l:extend(5))
  r.revived = raw("EXISTS", name) == 1
  g:release()
  local h1, h2 = assert(l:acquire { timeout = 0 }), assert(l:acquire { timeout = 0 })
  local token = assert(l:hand_off())
  r.token_names_client = token:match("^(.-):%d+$") == app.client:id()
  r.guards_closed = h1:released() and h2:released()
  r.release_after = word(l:release())
  r.closed_guard = h2:release()
  r.still_held = raw("EXISTS", name) == 1
  local t = ngx.thread.spawn(function() return l:release_token(token) end)
  r.token_release = select(2, ngx.thread.wait(t))
  r.gone = raw("EXISTS", name) == 0
  r.token_again = word(l:release_token(token))
  r.nonsense = word(l:release_token("nonsense"))
  out(r)
end

-- /hand_off?name=: takes the lock (lease 10 s) and hands it off: the token, and the request ends.
-- /release_token?name=&token=: releases what the token names.
function app.hand_off()
  local l = app.client:lock(ngx.unescape_uri(var.arg_name))
  assert(l:acquire { timeout = 0, lease = 10 })
  out { token = assert(l:hand_off()) }
end

function app.release_token()
  local l = app.client:lock(ngx.unescape_uri(var.arg_name))
  local ok, err = l:release_token(ngx.unescape_uri(var.arg_token))
  out { ok = ok, err = err }
end

-- /inspect: redlease.inspect and lock:owner() as the rock's tests/lua/ops_spec.lua checks them.
function app.inspect()
  local runner = require "redlease.resty.runner"
  local function raw(...) return runner.command(app.core, { ... }) end
  local c, r = app.client, {}
  local lock = c:lock("orders:42")
  assert(lock:acquire { lease = 20 })
  assert(lock:acquire { lease = 20 })
  local found = assert(redlease.inspect(c, "orders:42"))
  local o = found.owners[1]
  r.reentrant = found.kind == "reentrant" and #found.owners == 1 and o.client_id == c:id()
    and o.count == 2 and o["local"] == true and o.context:match("^%d+$") ~= nil
    and o.lease > 19 and o.lease <= 20 and o.write == false
    and o.field == c:id() .. ":" .. o.context
  local owners = assert(lock:owner())
  r.owner = #owners == 1 and owners[1].client_id == c:id() and owners[1].count == 2
  local t = ngx.thread.spawn(function() return lock:owner()[1]["local"] end)
  r.owner_in_thread = select(2, ngx.thread.wait(t)) -- the same worker's hold: local
  local nothing = redlease.inspect(c, "nothing")
  r.nothing = nothing.kind .. "," .. tostring(nothing.lease)
  raw("HSET", "line", "00000000-0000-0000-0000-000000000000:1", "1")
  raw("PEXPIRE", "line", "30000")
  raw("RPUSH", "redisson_lock_queue:{line}", "u:1", "u:2")
  local now = math.floor(ngx.now()) * 1000
  raw("ZADD", "redisson_lock_timeout:{line}", tostring(now + 60000), "u:1", tostring(now + 90000),
    "u:2")
  found = assert(redlease.inspect(c, "line"))
  r.fair = found.kind == "fair" and #found.queue == 2 and found.queue[1].owner == "u:1"
    and found.queue[1].timeout < found.queue[2].timeout and found.owners[1]["local"] == false
    and found.owners[1].client_id == "00000000-0000-0000-0000-000000000000"
    and found.owners[1].context == "1"
  local rw = c:rw_lock("doc")
  assert(rw.read:acquire { lease = 20 })
  found = assert(redlease.inspect(c, "doc"))
  r.rw = found.kind == "read_write" and found.mode == "read" and found.owners[1].lease > 19
  local w = c:rw_lock("wdoc")
  assert(w.write:acquire { lease = 20 })
  found = assert(redlease.inspect(c, "wdoc"))
  r.write = found.kind == "read_write" and found.mode == "write" and found.owners[1].write
    and found.owners[1]["local"]
  local f = c:fenced_lock("fence")
  assert(f:acquire { lease = 20 })
  found = assert(redlease.inspect(c, "fence"))
  r.fenced = found.kind == "fenced" and found.last_token >= 1
  raw("SET", "permits", "4")
  found = assert(redlease.inspect(c, "permits"))
  r.counter = found.kind == "counter" and found.count == 4
  raw("SET", "text", "hello")
  r.other = redlease.inspect(c, "text").kind
  r.bad_client = not pcall(redlease.inspect, "not a client", "x")
  r.bad_name = not pcall(redlease.inspect, c, "")
  out(r)
end

-- /latch?name=: the count-down latch as the rock's tests/lua/family_spec.lua checks it; two light
-- threads wait until the test counts it down to 0 (Redisson's way: DECR, DEL, "0").
function app.latch()
  local c, name = app.client, ngx.unescape_uri(var.arg_name)
  local latch = c:count_down_latch(name)
  local r = {}
  r.set = latch:try_set_count(2)
  r.set_again = latch:try_set_count(5)
  r.down = latch:count_down()
  r.count = latch:count()
  r.not_yet = select(2, latch:wait { timeout = 0 }):match("^timeout: .*did not reach 0 yet") ~= nil
  local function waiter() return latch:wait { timeout = 10 } end
  ngx.update_time()
  local started = ngx.now()
  local t1, t2 = ngx.thread.spawn(waiter), ngx.thread.spawn(waiter)
  local _, w1 = ngx.thread.wait(t1)
  local _, w2 = ngx.thread.wait(t2)
  r.waiters = tostring(w1) .. "," .. tostring(w2)
  ngx.update_time()
  r.woken_in_time = ngx.now() - started < 5 -- by the message, not their 10 s deadline
  r.count_after = latch:count()
  local stuck = c:count_down_latch(name .. ":stuck")
  assert(stuck:try_set_count(1))
  ngx.update_time()
  local t0 = ngx.now()
  local _, err = stuck:wait { timeout = 0.3 }
  ngx.update_time()
  r.gave_up = err:match("^timeout: .*did not reach 0 within the wait") ~= nil
    and ngx.now() - t0 >= 0.25
  r.delete = stuck:delete()
  r.delete_again = stuck:delete()
  r.bad_count = select(2, pcall(stuck.try_set_count, stuck, 0)):match("bad argument.*")
  r.bad_wait = not pcall(stuck.wait, stuck, { timeout = -1 }) and not pcall(stuck.wait, stuck, 5)
  out(r)
end

-- /gc: a full collection in this worker.
function app.gc()
  collectgarbage()
  collectgarbage()
  out { pid = ngx.worker.pid() }
end

-- Phase probes: a bad argument, then a one-try acquire, each said in the error log as
-- "PROBE-ARG <where> <error>" and "PROBE-CALL <where> <result>".
function app.probe(where, url)
  local client = url and redlease.connect(url) or app.client
  local l = client:lock("probe:" .. where)
  local _, msg = pcall(l.acquire, l, { timeout = "soon" })
  ngx.log(ngx.ERR, "PROBE-ARG ", where, " ", tostring(msg))
  local _, msg2 = pcall(client.lock, client, 42)
  ngx.log(ngx.ERR, "PROBE-ARG ", where, " ", tostring(msg2))
  local g, err = l:acquire { timeout = 0 }
  ngx.log(ngx.ERR, "PROBE-CALL ", where, " ", g and "acquired" or tostring(err))
  if g then
    local ok, rerr = g:release()
    ngx.log(ngx.ERR, "PROBE-RELEASE ", where, " ", tostring(ok or rerr))
  end
end

return app
