-- Semaphores of Redisson's layout: Semaphore (RSemaphore: permits shared by every client,
-- Java's too, each belonging to the client that took it) and PermitSemaphore
-- (RPermitExpirableSemaphore: each permit has an id and a lease, and comes back by itself when
-- the lease runs out). The C core (redlease.core) does the work; this gives it Lua's habits.
local args = require "redlease.args"
local methods = require "redlease.methods"
local with = require "redlease.with"

local M = {}

-- A guard: the permits one acquire took, given back once (guard:release(), or leaving a
-- `<close>` scope). Permits belong to the client, not to a coroutine: a guard that is dropped
-- keeps them until some coroutine gives them back with sem:release(n).
local Permits = {}
Permits.__index = Permits

-- Gives the permits back, once: true, or nil and an error; true again once given back.
function Permits:release()
  if self._released then return true end
  self._released = true -- the core counts them out whatever the answer
  return self._sem._core:release(self.permits)
end

-- Whether they were given back.
function Permits:released() return self._released end

function Permits.__close(self, err)
  local ok, why = self:release()
  if not ok and err == nil then error(why, 0) end
end

function Permits.__tostring(self)
  return ("redlease.permits %d of %q%s"):format(self.permits, self._sem.name,
    self._released and " (released)" or "")
end

-- A Redisson RSemaphore (client:semaphore(name)): permits shared by every client, Java's too,
-- each belonging to the client that took it.
local Semaphore = {}
Semaphore.__index = Semaphore
M.Semaphore = Semaphore

function Semaphore.new(client, core_sem, name)
  return setmetatable({ client = client, name = name, _core = core_sem }, Semaphore)
end

-- acquire{permits = n (default 1), timeout = seconds (nil: forever, 0: one try)} -> guard |
-- nil, err ("timeout: ..." when they were not free in time).
function Semaphore:acquire(opts)
  local permits, wait = args.permits("acquire", opts)
  local ok, err = self._core:acquire(permits, wait)
  if not ok then return nil, err end
  return setmetatable({ _sem = self, permits = permits, _released = false }, Permits)
end

-- As acquire, but a failure raises its error instead of answering nil (as lock:guard): for
-- `local permits <close> = sem:guard{...}`.
function Semaphore:guard(opts)
  local permits, wait = args.permits("guard", opts)
  local ok, err = self._core:acquire(permits, wait)
  if not ok then error(err, 0) end
  return setmetatable({ _sem = self, permits = permits, _released = false }, Permits)
end

-- Gives back n (default 1) permits this client took: true, or nil and "not_owned: ..." when it
-- holds fewer (add_permits gives permits it did not take).
function Semaphore:release(n)
  return self._core:release(args.whole("release", "permits", n == nil and 1 or n, 0))
end

-- Acquires (opts as acquire), calls fn(...), gives the permits back; returns fn's results.
-- Raises when they cannot be had; re-raises fn's error after giving them back.
function Semaphore:with(fn, opts, ...)
  args.callable("with", fn)
  local permits, wait = args.permits("with", opts)
  local ok, err = self._core:acquire(permits, wait)
  if not ok then error(err, 0) end
  local guard = setmetatable({ _sem = self, permits = permits, _released = false }, Permits)
  return with.finish(guard, pcall(fn, ...))
end

-- Sets the number of permits when the semaphore does not exist yet: true, or false when it
-- exists (left alone).
function Semaphore:try_set_permits(n)
  return self._core:try_set_permits(args.whole("try_set_permits", "permits", n, 0))
end

-- Adds n permits (negative: takes some away).
function Semaphore:add_permits(n)
  return self._core:add_permits(args.whole("add_permits", "permits", n, -2^53))
end

-- The permits free now.
function Semaphore:available_permits() return self._core:available() end
-- Takes every free permit: how many (they are this client's to release).
function Semaphore:drain_permits() return self._core:drain() end
-- Local, no round trip: the permits of this semaphore this client holds.
function Semaphore:held() return self._core:held() end

function Semaphore:__tostring() return ("redlease.semaphore %q"):format(self.name) end

-- A Redisson RPermitExpirableSemaphore (client:permit_expirable_semaphore(name)): each permit
-- has an id and a lease, and comes back by itself when the lease runs out.
local PermitSemaphore = {}
PermitSemaphore.__index = PermitSemaphore
M.PermitSemaphore = PermitSemaphore

function PermitSemaphore.new(client, core_sem, name)
  return setmetatable({ client = client, name = name, _core = core_sem }, PermitSemaphore)
end

-- acquire{lease = seconds | watchdog = true, timeout = seconds} -> permit id (32 hex digits) |
-- nil, err. watchdog = true: the client's watchdog renews the permit until it is released
-- (redlease's addition; Redisson does not renew permits).
function PermitSemaphore:acquire(opts)
  local lease, wait = args.permit("acquire", opts)
  return self._core:acquire(lease, wait)
end

-- true, or nil and "not_owned: ..." (no such permit held) / "lost: ..." (it had expired).
function PermitSemaphore:release(id)
  return self._core:release(args.string("release", "id", id))
end

-- The permit's lease becomes `seconds` from now (a renewed permit stops being renewed).
function PermitSemaphore:update_lease_time(id, seconds)
  args.string("update_lease_time", "id", id)
  return self._core:update_lease(id, args.seconds("update_lease_time", "lease", seconds))
end

-- Acquires (opts as acquire), calls fn(permit_id, ...), releases; returns fn's results.
function PermitSemaphore:with(fn, opts, ...)
  args.callable("with", fn)
  local lease, wait = args.permit("with", opts)
  local id, err = self._core:acquire(lease, wait)
  if not id then error(err, 0) end
  local core = self._core
  return with.finish({ release = function() return core:release(id) end }, pcall(fn, id, ...))
end

-- As a semaphore's: sets the number of permits when it does not exist yet: true, or false.
function PermitSemaphore:try_set_permits(n)
  return self._core:try_set_permits(args.whole("try_set_permits", "permits", n, 0))
end

-- Adds n permits (negative: takes some away).
function PermitSemaphore:add_permits(n)
  return self._core:add_permits(args.whole("add_permits", "permits", n, -2^53))
end

-- The permits free now, expired ones counted back in.
function PermitSemaphore:available_permits() return self._core:available() end
-- Local, no round trip: true and the reason when a permit the watchdog renews was lost.
function PermitSemaphore:lost(id) return self._core:lost(args.string("lost", "id", id)) end

function PermitSemaphore:__tostring()
  return ("redlease.permit_semaphore %q"):format(self.name)
end

methods.wrap(Permits, "permits", function(self) return self._sem.client end)
methods.wrap(Semaphore, "semaphore", function(self) return self.client end)
methods.wrap(PermitSemaphore, "semaphore", function(self) return self.client end)

return M
