-- Semaphores of Redisson's layout inside nginx, with the rock's API and answers
-- (redlease/semaphore.lua, csrc/core/family/semaphore.c and expirable.c):
-- - Semaphore (RSemaphore): STRING `name` = the free permits;
-- - PermitSemaphore (RPermitExpirableSemaphore): the same count, and ZSET "{name}:timeout" of the
--   permits taken (16 raw bytes each) scored with the epoch ms at which they expire.
-- Both publish the new count on "redisson_sc:{name}"; a waiter sleeps on the worker's subscriber
-- and a message of n free permits lets up to n waiters try (Redisson's SemaphorePubSub).
-- Permits belong to the run (request) that took them, as holds of locks do: the watchdog gives
-- back those of a run that ended (watchdog.lua), and renews permits taken with watchdog = true.
local args = require "redlease.args"
local keys = require "redlease.resty.keys"
local owner = require "redlease.resty.owner"
local runner = require "redlease.resty.runner"
local validity = require "redlease.resty.validity"
local watchdog = require "redlease.resty.watchdog"
local with = require "redlease.with"

local M = {}
local PUBLISH = "publish"
local PERMIT_HINT_MIN_MS = 5 -- an expired permit not yet taken back: look again soon, not at once

local function now_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

local function waited(wait_ms)
  if wait_ms <= 0 then return "now" end
  return ("within %d.%03d s"):format(math.floor(wait_ms / 1000), wait_ms % 1000)
end

-- A script refused with WRONGTYPE names the user's key and what it holds (as the core's
-- wrong_type.c); any other failure as the runner said it.
local function refused(self, err, what)
  if not (err and err:find("WRONGTYPE", 1, true)) then return nil, err end
  local t = runner.command(self._core, { "TYPE", self.name })
  return nil, ('server: "%s" holds a value of another type (%s); redlease needs it for %s '
    .. "(WRONGTYPE)"):format(self._shown, type(t) == "string" and t or "?", what)
end

-- One script call -> its answer | nil, err
local function script(self, call)
  local replies, err = runner.run(self._core, { call }, false)
  if not replies then return refused(self, err, self._what) end
  return replies[1]
end

-- `attempt()` -> true, x | false, hint ms (-1: none) | nil, err; tried once, then (wait_ms ~= 0)
-- again after subscribing and after each wake-up, until it answers other than false or the wait
-- runs out. -> true, x | false | nil, err
local function wait_for(self, attempt, wait_ms)
  local got, x = attempt()
  if got ~= false or wait_ms == 0 then return got, x end
  local core = self._core
  local deadline = wait_ms > 0 and now_ms() + wait_ms or nil
  local run = owner.run()
  local entry, err = core.sub:join(self._channel, run)
  if not entry then return nil, err end
  entry.wake_by_count = true
  while true do
    got, x = attempt() -- after subscribing: no message missed
    if got ~= false then break end
    local t = now_ms()
    if deadline and t >= deadline then break end
    local wake = deadline
    if x >= 0 and (not wake or t + x < wake) then wake = t + x end
    local ok, werr = core.sub:wait(entry, wake)
    if ok == nil then
      got, x = nil, werr
      break
    end
  end
  core.sub:leave(entry, run)
  return got, x
end

-- Why permits could not be had (rl_named_not_free).
local function not_free(self, count, wait_ms)
  local n = runner.command(self._core, { "EXISTS", self.name })
  if n == 0 then
    return nil, ('timeout: semaphore "%s" has no permits (it does not exist): set them with '
      .. "try_set_permits or add_permits"):format(self._shown)
  end
  return nil, ('timeout: semaphore "%s": %d permit(s) not free %s'):format(self._shown, count,
    waited(wait_ms))
end

local function new(class, client, name, what)
  return setmetatable({ client = client.public, name = name, _core = client, _what = what,
    _channel = keys.prefixed("redisson_sc", name), _shown = keys.shown(name) }, class)
end

local function ready(self, what)
  return self._core:ready(what)
end

-- ---- Semaphore -----------------------------------------------------------------------------

local Semaphore = {}
Semaphore.__index = Semaphore
M.Semaphore = Semaphore

function Semaphore.new(client, name)
  if client.cluster then client.cluster.check_name(name, "semaphore") end
  return new(Semaphore, client, name, "a semaphore")
end

local function give_back(self, n)
  local v, err = script(self, { "semaphore_release", 2, self.name, self._channel, n, PUBLISH })
  if v == nil then return nil, err end
  return true
end

-- The calling run's hold of this semaphore (its permit count), or nil; and the run.
local function run_hold(self, run)
  run = run or owner.run()
  return self._core.holds["semaphore:" .. self.name .. "\0" .. run.id], run
end

-- The watchdog gives back the permits of a run that ended (client:release_leftover).
local function leftover(h)
  return give_back(h.sem, h.count)
end

local function count_held(self, run, n)
  local core = self._core
  local h = run_hold(self, run)
  if not h then
    local key = "semaphore:" .. self.name .. "\0" .. run.id
    h = { key = key, name = self.name, shown = self._shown, what = "semaphore", sem = self,
      count = 0, run = run, watched = false, leftover = leftover }
    core.holds[key] = h
  end
  h.count = h.count + n
  local ok, err = watchdog.start(core) -- its rounds give back what an ended run kept
  if not ok then ngx.log(ngx.ERR, "redlease: ", err) end
end

-- Counts n permits out of the run's hold before they go back: true, or nil, "not_owned: ...".
local function count_out(self, run, n)
  local h = run_hold(self, run)
  local held = h and h.count or 0
  if held < n then
    return nil, ('not_owned: semaphore "%s": cannot release %d permit(s), this context holds %d')
      :format(self._shown, n, held)
  end
  if h then
    h.count = h.count - n
    if h.count == 0 then self._core:forget_hold(h) end
  end
  return true
end

-- A guard: the permits one acquire took, given back once, from any run.
local Permits = {}
Permits.__index = Permits

function Permits:release()
  if self._released then return true end
  self._released = true -- counted out whatever the answer
  local sem = self._sem
  local ok, err = sem._core:ready("release")
  if not ok then return nil, err end
  if self.permits == 0 then return true end
  ok, err = count_out(sem, self._run, self.permits)
  if not ok then return nil, err end
  return give_back(sem, self.permits)
end

function Permits:released() return self._released end

function Permits.__tostring(self)
  return ("redlease.permits %d of %q%s"):format(self.permits, self._sem.name,
    self._released and " (released)" or "")
end

local function acquire(self, permits, wait_ms)
  local ok, err = ready(self, "acquire")
  if not ok then return nil, err end
  local run = owner.run()
  if permits > 0 then
    local got, why = wait_for(self, function()
      local v, serr = script(self, { "semaphore_acquire", 1, self.name, permits })
      if v == nil then return nil, serr end
      if v == 1 then return true end
      return false, -1 -- only a release (its message) frees permits
    end, wait_ms)
    if got == nil then return nil, why end
    if not got then return not_free(self, permits, wait_ms) end
    count_held(self, run, permits)
  end
  return setmetatable({ _sem = self, _run = run, permits = permits, _released = false }, Permits)
end

-- acquire{permits = n (default 1), timeout = seconds (nil: forever, 0: one try)} -> guard |
-- nil, err ("timeout: ..." when they were not free in time).
function Semaphore:acquire(opts)
  return acquire(self, args.permits("acquire", opts))
end

-- As acquire, raising its error.
function Semaphore:guard(opts)
  local g, err = acquire(self, args.permits("guard", opts))
  if not g then error(err, 0) end
  return g
end

-- Gives back n (default 1) permits the calling run took: true, or nil and "not_owned: ...".
function Semaphore:release(n)
  n = args.whole("release", "permits", n == nil and 1 or n, 0)
  local ok, err = ready(self, "release")
  if not ok then return nil, err end
  if n == 0 then return true end
  ok, err = count_out(self, owner.run(), n)
  if not ok then return nil, err end
  return give_back(self, n)
end

-- Acquires (opts as acquire), calls fn(...), gives the permits back; returns fn's results.
function Semaphore:with(fn, opts, ...)
  args.callable("with", fn)
  local g, err = acquire(self, args.permits("with", opts))
  if not g then error(err, 0) end
  return with.finish(g, pcall(fn, ...))
end

local function count_write(self, what, name, n)
  local ok, err = ready(self, what)
  if not ok then return nil, err end
  return script(self, { name, 2, self.name, self._channel, n, PUBLISH })
end

-- Sets the number of permits when the semaphore does not exist yet: true, or false.
function Semaphore:try_set_permits(n)
  local v, err = count_write(self, "try_set_permits", "semaphore_try_set",
    args.whole("try_set_permits", "permits", n, 0))
  if v == nil then return nil, err end
  return v == 1
end

-- Adds n permits (negative: takes some away).
function Semaphore:add_permits(n)
  local v, err = count_write(self, "add_permits", "semaphore_add",
    args.whole("add_permits", "permits", n, -2 ^ 53))
  if v == nil then return nil, err end
  return true
end

local function get_count(self)
  local v, err = runner.command(self._core, { "GET", self.name })
  if v == nil then return refused(self, err, self._what) end
  return tonumber(v) or 0
end

-- The permits free now.
function Semaphore:available_permits()
  local ok, err = ready(self, "available_permits")
  if not ok then return nil, err end
  return get_count(self)
end

-- Takes every free permit: how many (the calling run's to release).
function Semaphore:drain_permits()
  local ok, err = ready(self, "drain_permits")
  if not ok then return nil, err end
  local n
  n, err = script(self, { "semaphore_drain", 1, self.name })
  if n == nil then return nil, err end
  if n > 0 then count_held(self, owner.run(), n) end
  return n
end

-- Local, no round trip: the permits of this semaphore the calling run holds.
function Semaphore:held()
  local h = run_hold(self)
  return h and h.count or 0
end

function Semaphore:__tostring() return ("redlease.semaphore %q"):format(self.name) end

-- ---- PermitSemaphore -----------------------------------------------------------------------

local PermitSemaphore = {}
PermitSemaphore.__index = PermitSemaphore
M.PermitSemaphore = PermitSemaphore

-- "{name}:timeout", or name .. ":timeout" when the name has a '{' (as expirable.c).
function PermitSemaphore.new(client, name)
  if client.cluster then client.cluster.check_name(name, "semaphore") end
  local s = new(PermitSemaphore, client, name, "a permit-expirable semaphore")
  s._timeout = name:find("{", 1, true) and name .. ":timeout" or "{" .. name .. "}:timeout"
  return s
end

-- A permit id: 32 hex digits -> lowercase hex, raw bytes | nil
local function parse_id(id)
  if #id ~= 32 or id:find("[^%x]") then return nil end
  local hex = id:lower()
  return hex, (hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end))
end

local BAD_ID = "argument: a permit id is 32 hex digits"

local function permit_key(self, hex) return "permit:" .. self.name .. "\0" .. hex end

local function release_raw(self, raw)
  return script(self, { "permit_release", 3, self.name, self._channel, self._timeout, raw,
    PUBLISH })
end

-- The watchdog gives back a permit of a run that ended.
local function permit_leftover(h)
  local v, err = release_raw(h.sem, h.raw)
  if v == nil then return nil, err end
  return true
end

local function try_permit(self, lease, raw)
  return function()
    local sent_at = now_ms()
    local v, err = script(self, { "permit_acquire", 3, self.name, self._timeout, self._channel,
      lease, PUBLISH, raw })
    if v == nil then return nil, err end
    if v == "ACQUIRED" then return true, sent_at end
    if type(v) ~= "number" then return nil, "server: unexpected answer to a permit acquire" end
    -- nobody publishes when a permit expires: look again when the first one does
    return false, v < 0 and -1 or v + PERMIT_HINT_MIN_MS
  end
end

local function acquire_permit(self, lease_ms, wait_ms)
  local core = self._core
  local ok, err = ready(self, "acquire")
  if not ok then return nil, err end
  local lease = lease_ms > 0 and lease_ms or core.watchdog_ms
  local hex = owner.random_hex(16)
  local _, raw = parse_id(hex)
  local got, sent_at = wait_for(self, try_permit(self, lease, raw), wait_ms)
  if got == nil then return nil, sent_at end
  if not got then return not_free(self, 1, wait_ms) end
  local run = owner.run()
  local key = permit_key(self, hex)
  local h = { key = key, name = self._timeout, field = hex, read_holds = "#permit", raw = raw,
    shown = self._shown .. '" permit "' .. hex, what = "semaphore", sem = self, count = 1,
    run = run, leftover = permit_leftover, watchdog = lease_ms == -1 or nil,
    lease_ms = lease, watched = lease_ms == -1 }
  validity.confirmed(h, sent_at, lease)
  core.holds[key] = h
  local started, werr = watchdog.start(core)
  if not started then ngx.log(ngx.ERR, "redlease: ", werr) end
  return hex
end

-- acquire{lease = seconds | watchdog = true, timeout = seconds} -> permit id (32 hex digits) |
-- nil, err.
function PermitSemaphore:acquire(opts)
  return acquire_permit(self, args.permit("acquire", opts))
end

local function lost_permit(self, hex, reason)
  return nil, ('lost: permit %s of semaphore "%s" was lost while held (%s)'):format(hex,
    self._shown, reason)
end

local function release_permit(self, id)
  local ok, err = ready(self, "release")
  if not ok then return nil, err end
  local hex, raw = parse_id(id)
  if not hex then return nil, BAD_ID end
  local core = self._core
  local h = core.holds[permit_key(self, hex)]
  local lost = h and h.lost
  if h then core:forget_hold(h) end -- no renewal, no release at its run's end from now on
  local v
  v, err = release_raw(self, raw)
  if v == nil then return nil, err end
  if lost then return lost_permit(self, hex, lost) end
  if v == 2 then return lost_permit(self, hex, "expired") end
  if v ~= 1 then
    return nil, ('not_owned: semaphore "%s" has no permit %s (never acquired, already released, '
      .. "or expired and taken back)"):format(self._shown, hex)
  end
  return true
end

-- true, or nil and "not_owned: ..." (no such permit held) / "lost: ..." (it had expired).
function PermitSemaphore:release(id)
  return release_permit(self, args.string("release", "id", id))
end

-- The permit's lease becomes `seconds` from now (a renewed permit stops being renewed).
function PermitSemaphore:update_lease_time(id, seconds)
  args.string("update_lease_time", "id", id)
  local lease = args.seconds("update_lease_time", "lease", seconds)
  local ok, err = ready(self, "update_lease_time")
  if not ok then return nil, err end
  local hex, raw = parse_id(id)
  if not hex then return nil, BAD_ID end
  local h = self._core.holds[permit_key(self, hex)]
  if h then -- from now on its lease is the one given here; its run still gives it back
    h.watched, h.watchdog, h.lease_ms = false, nil, lease
  end
  local sent_at = now_ms()
  local v
  v, err = script(self, { "permit_update_lease", 3, self.name, self._timeout, self._channel, raw,
    lease, PUBLISH })
  if v == nil then return nil, err end
  if v ~= 1 then
    return nil, ('not_owned: semaphore "%s" has no permit %s (never acquired, already released, '
      .. "or expired)"):format(self._shown, hex)
  end
  if h then validity.confirmed(h, sent_at, lease) end
  return true
end

-- Acquires (opts as acquire), calls fn(permit_id, ...), releases; returns fn's results.
function PermitSemaphore:with(fn, opts, ...)
  args.callable("with", fn)
  local id, err = acquire_permit(self, args.permit("with", opts))
  if not id then error(err, 0) end
  return with.finish({ release = function() return release_permit(self, id) end },
    pcall(fn, id, ...))
end

function PermitSemaphore:try_set_permits(n)
  local v, err = count_write(self, "try_set_permits", "semaphore_try_set",
    args.whole("try_set_permits", "permits", n, 0))
  if v == nil then return nil, err end
  return v == 1
end

function PermitSemaphore:add_permits(n)
  local v, err = count_write(self, "add_permits", "permit_add",
    args.whole("add_permits", "permits", n, -2 ^ 53))
  if v == nil then return nil, err end
  return true
end

-- The permits free now, expired ones counted back in.
function PermitSemaphore:available_permits()
  local ok, err = ready(self, "available_permits")
  if not ok then return nil, err end
  return script(self, { "permit_available", 3, self.name, self._timeout, self._channel,
    PUBLISH })
end

-- Local, no round trip: true and the reason when a permit the watchdog renews was lost.
function PermitSemaphore:lost(id)
  local hex = parse_id(args.string("lost", "id", id))
  local h = hex and self._core.holds[permit_key(self, hex)]
  if h and h.lost then return true, h.lost end
  return false
end

function PermitSemaphore:__tostring()
  return ("redlease.permit_semaphore %q"):format(self.name)
end

return M
