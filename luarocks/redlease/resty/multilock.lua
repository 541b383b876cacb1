-- Several locks (any kinds, any clients) taken as one by the calling run, all or none, with the
-- timing rules of Redisson's RedissonMultiLock and RedissonRedLock, as the C core's
-- (csrc/core/family/multilock.c says them in full):
-- - one wait covers all the locks, each lock waits at most what is left of it (RedLock: that
--   divided by the number of locks, at least 1 ms);
-- - a fixed lease takes the locks with twice the wait (the lease itself without a wait), then
--   sets the lease asked for on each, where this owner still holds it;
-- - a lock that cannot be had releases the ones taken; with a wait the acquire starts over;
-- - RedLock: n - (n/2 + 1) failures (timeouts, connection and server errors) are tolerated and a
--   majority is kept only when the time spent leaves some of the lease (its validity);
-- - waiting forever is a series of bounded tries.
-- Each member is acquired and released as a lock of the calling run (lock.lua), so a run that
-- ends holding them has them released by the watchdog as any lock.
local args = require "redlease.args"
local Lock = require "redlease.resty.lock"
local lease_ops = require "redlease.resty.lease_ops"
local with = require "redlease.with"

local MultiLock = {}
MultiLock.__index = MultiLock

local BASE_WAIT_MS = 1500 -- per lock, for one try of a wait without end
local ERROR_PAUSE_MS = 100 -- RedLock: a round that failed on errors only waits this long
local MAX_LEASE_MS = 2 ^ 40

local function now_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

-- MultiLock.new(fname, redlock, lock, ...): the locks checked (resty locks, none twice).
function MultiLock.new(fname, redlock, ...)
  local locks = { ... }
  if #locks == 0 or select("#", ...) ~= #locks then
    error(("bad argument #1 to '%s' (lock expected, got %s)"):format(fname,
      type(locks[1] or nil)), 3)
  end
  for i, l in ipairs(locks) do
    if getmetatable(l) ~= Lock then
      error(("bad argument #%d to '%s' (lock expected, got %s)"):format(i, fname, type(l)), 3)
    end
    for j = 1, i - 1 do
      local o = locks[j]
      if o._core == l._core and o.kind == l.kind and o.name == l.name then
        error(('bad argument #%d to \'%s\' (lock "%s" is given twice)'):format(i, fname,
          l._shown), 3)
      end
    end
  end
  return setmetatable({ locks = locks, redlock = redlock }, MultiLock)
end

local function release_taken(taken)
  for i, g in pairs(taken) do
    g:release()
    taken[i] = nil
  end
end

-- RedLock: the locks taken still make a majority, none lost, and the time spent leaves some of
-- the lease they were taken with (watchdog mode: each client's watchdog timeout).
local function still_valid(self, taken, lease, elapsed)
  local alive, shortest = 0, lease
  for i, l in ipairs(self.locks) do
    if taken[i] and not l:lost() then
      alive = alive + 1
      if lease <= 0 then
        local t = l._core.watchdog_ms
        if shortest <= 0 or t < shortest then shortest = t end
      end
    end
  end
  local drift = math.floor(shortest / 100) + 2
  return alive >= math.floor(#self.locks / 2) + 1 and shortest - elapsed - drift > 0
end

local function waited(wait)
  if wait <= 0 then return "" end
  return (" within %d.%03d s"):format(math.floor(wait / 1000), wait % 1000)
end

-- One tryLock(wait, lease): -> the members' guards (by index) | nil, err
local function try_all(self, wait, lease, max_hold)
  local locks, redlock = self.locks, self.redlock
  local n = #locks
  local tolerated = redlock and n - (math.floor(n / 2) + 1) or 0
  local taken_lease = lease <= 0 and -1 or wait > 0 and wait * 2 or lease
  if taken_lease > MAX_LEASE_MS then taken_lease = MAX_LEASE_MS end
  local start = now_ms()
  local time, remain = start, wait > 0 and wait or -1
  local lock_wait = remain
  if redlock then lock_wait = math.max(math.floor(remain / n), 1) end
  local taken, ntaken, left_to_fail, failed_on_errors, failure = {}, 0, tolerated, true, nil
  local i = 1
  while i <= n do
    local member_wait = 0
    if wait > 0 or lease > 0 then member_wait = math.max(math.min(lock_wait, remain), 0) end
    local g, err = locks[i]:_acquire(taken_lease, member_wait, max_hold)
    if g then
      taken[i] = g
      ntaken = ntaken + 1
      i = i + 1
    else
      local word = err:match("^(%w+):")
      if not (word == "timeout" or redlock and (word == "connection" or word == "server")) then
        release_taken(taken) -- closed, lost, bad input: the acquire ends with it
        return nil, err
      end
      if word == "timeout" then failed_on_errors = false end
      failure = err
      if n - ntaken == tolerated then break end -- RedLock: the rest may fail, a majority is in
      if left_to_fail == 0 then
        release_taken(taken)
        ntaken = 0
        if wait <= 0 then break end
        left_to_fail, i = tolerated, 1 -- start over
        if failed_on_errors then
          local pause = math.min(ERROR_PAUSE_MS, remain - (now_ms() - time))
          if pause > 0 then ngx.sleep(pause / 1000) end
        end
        failed_on_errors = true
      else
        left_to_fail = left_to_fail - 1
        i = i + 1
      end
    end
    if remain > 0 then
      local t = now_ms()
      remain = remain - (t - time)
      time = t
      if remain <= 0 then
        release_taken(taken)
        ntaken = 0
        break
      end
    end
  end
  local ok = ntaken > 0 and ntaken >= n - tolerated
  if ok and redlock and not still_valid(self, taken, taken_lease, now_ms() - start) then
    release_taken(taken)
    ok, failure = false, "the majority was taken too late (validity ran out)"
  end
  if ok and lease > 0 then
    for k, g in pairs(taken) do
      local set, serr = lease_ops.extend(locks[k], lease, true)
      if not set then
        release_taken(taken)
        return nil, (serr:gsub(" before it was extended", " while the multi-lock was taken"))
      end
      local hold = locks[k]:_hold()
      if hold then hold.lease_ms = lease end
      taken[k] = g
    end
  end
  if not ok then
    release_taken(taken)
    return nil, ("timeout: %s not acquired%s: %d of %d lock(s) needed%s"):format(
      redlock and "RedLock" or "multi-lock", waited(wait), n - tolerated, n,
      failure and "; last failure: " .. failure or "")
  end
  return taken
end

-- A wait without end: tries of a bounded wait (RedissonMultiLock.lockInterruptibly).
local function forever_wait(self, lease)
  local base = #self.locks * BASE_WAIT_MS
  local one = base
  if lease > 0 then
    if lease <= base then one = math.random(math.floor(lease / 2), lease)
    else one = math.random(base, lease) end
  end
  return math.max(one, 1)
end

-- A guard for the locks one acquire took: released once, every lock of it.
local Guard = {}
Guard.__index = Guard

function Guard:release()
  if not self._open then return true end
  local first_err
  for _, g in pairs(self._guards) do
    local ok, err = g:release()
    if not ok and not first_err then first_err = err end
  end
  self._open = false
  if first_err then return nil, first_err end
  return true
end

function Guard:released() return not self._open end

function Guard.__tostring(self)
  return self._open and "redlease.guard (held)" or "redlease.guard (released)"
end

local function acquire(self, lease, wait, max_hold)
  local taken, err
  if wait ~= -1 then
    taken, err = try_all(self, wait, lease, max_hold)
  else
    repeat
      taken, err = try_all(self, forever_wait(self, lease), lease, max_hold)
    until taken or not err:find("^timeout:")
  end
  if not taken then return nil, err end
  return setmetatable({ _guards = taken, _open = true }, Guard)
end

-- acquire{timeout = seconds (nil: forever, 0: one try), lease = seconds (nil: watchdog),
-- max_hold = seconds} -> guard | nil, err
function MultiLock:acquire(opts)
  return acquire(self, args.acquire("acquire", opts))
end

-- As acquire, raising its error.
function MultiLock:guard(opts)
  local g, err = acquire(self, args.acquire("guard", opts))
  if not g then error(err, 0) end
  return g
end

-- Releases every lock of it the calling run holds (each through its newest guard).
function MultiLock:release()
  local held, first_err = 0, nil
  for _, l in ipairs(self.locks) do
    local hold = l:_hold()
    if hold and hold.count > 0 then
      held = held + 1
      local ok, err = l:release()
      if not ok and not first_err then first_err = err end
    end
  end
  if held == 0 then
    return nil, ("not_owned: %s is not held by this context"):format(self.redlock
      and "the RedLock" or "the multi-lock")
  end
  if first_err then return nil, first_err end
  return true
end

-- Acquires, calls fn(...), releases; returns fn's results (as lock:with).
function MultiLock:with(fn, opts, ...)
  args.callable("with", fn)
  local g, err = acquire(self, args.acquire("with", opts))
  if not g then error(err, 0) end
  return with.finish(g, pcall(fn, ...))
end

-- Local, no round trip: how many of its locks the calling run holds.
function MultiLock:held()
  local n = 0
  for _, l in ipairs(self.locks) do
    local hold = l:_hold()
    if hold and hold.count > 0 and not hold.lost then n = n + 1 end
  end
  return n
end

function MultiLock:__tostring()
  return ("redlease.%s of %d locks"):format(self.redlock and "red_lock" or "multi_lock",
    #self.locks)
end

return MultiLock
