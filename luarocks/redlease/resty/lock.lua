-- A lock of any Redisson kind ("lock", "fenced", "fair", "read", "write") on one name of one
-- client: acquire with waiting, release through the unlock latch, the queries. The flow is the
-- C core's (csrc/core/lock.c); every wait is a cosocket or ngx.semaphore wait, so the worker
-- serves other requests meanwhile.
local args = require "redlease.args"
local calls = require "redlease.resty.calls"
local Guard = require "redlease.resty.guard"
local keys = require "redlease.resty.keys"
local owner = require "redlease.resty.owner"
local resp = require "redlease.resty.resp"
local runner = require "redlease.resty.runner"
local watchdog = require "redlease.resty.watchdog"

local Lock = {}
Lock.__index = Lock

local null = resp.null
local FAIR_RECHECK_MS = 100 -- a fair waiter told "0 ms" (another is first in line) looks again

local function now_ms()
  return ngx.now() * 1000
end

function Lock.new(client, name, kind)
  return setmetatable({ client = client, name = name, kind = kind, _keys = keys.of(kind, name),
    _shown = keys.shown(name), _key = kind .. ":" .. name }, Lock)
end

function Lock:__tostring()
  return ("redlease.%s %q"):format(self.kind, self.name)
end

local function lost_message(self, reason, what)
  return ('lost: the hold of lock "%s" was lost%s (%s)'):format(self._shown, what, reason)
end

local function not_owned(self)
  return nil, ('not_owned: lock "%s" is not held by this context'):format(self._shown)
end

-- The calling run's hold of this lock, or nil (and the run).
function Lock:_hold()
  local run = owner.run()
  return self.client.holds[self._key .. "\0" .. run.id], run
end

local function try_once(self, who, lease, queue, window)
  local sent_at = now_ms()
  local got, x = calls.acquire(self, who, lease, queue, window)
  if got == false and self.kind == "fair" and x < FAIR_RECHECK_MS then x = FAIR_RECHECK_MS end
  return got, x, sent_at
end

-- Subscribe, try again, then sleep until a release message or the holder's lease end, until
-- acquired, the deadline, or an error. -> as try_once
local function wait_and_retry(self, who, lease, window, deadline, hint)
  local sub = self.client.sub
  local entry, err = sub:join(keys.wait_channel(self.kind, self._keys, who))
  if not entry then return nil, err end
  local got, x, sent_at
  while true do
    got, x, sent_at = try_once(self, who, lease, true, window) -- after joining: no wake-up missed
    if got ~= false then break end
    ngx.update_time()
    local t = now_ms()
    if deadline and t >= deadline then break end
    local wake = deadline
    if x >= 0 and (not wake or t + x < wake) then wake = t + x end
    local ok, werr = sub:wait(entry, wake)
    if ok == nil then
      got, x = nil, werr
      break
    end
  end
  sub:leave(entry)
  return got, x, sent_at
end

function Lock:_acquire(lease_ms, wait_ms, max_hold)
  local client = self.client
  local ok, err = client:ready("acquire")
  if not ok then return nil, err end
  local hold, run = self:_hold()
  if hold and hold.lost then return nil, lost_message(self, hold.lost, "; release it first") end
  local who = client:owner_of(run)
  local lease = lease_ms > 0 and lease_ms or client.watchdog_ms
  local window = wait_ms > 0 and wait_ms or client.fair_wait_ms
  ngx.update_time()
  local start = now_ms()
  local got, x, sent_at = try_once(self, who, lease, wait_ms ~= 0, window)
  if got == false and wait_ms ~= 0 then
    got, x, sent_at = wait_and_retry(self, who, lease, window, wait_ms > 0 and start + wait_ms or nil, x)
  end
  -- a fair waiter that did not get the lock leaves the queue, whatever stopped it
  if got ~= true and wait_ms ~= 0 and self.kind == "fair" then calls.leave_queue(self, who, window) end
  if got == nil then return nil, x end
  if got == false then
    return nil, ('timeout: lock "%s" is held by another owner'):format(self._shown)
  end
  -- record the hold (no yield from the answer to here: renewal starts with the hold)
  local key = self._key .. "\0" .. run.id
  hold = client.holds[key]
  if not hold then
    hold = { key = key, lock = self, name = self.name, shown = self._shown, kind = self.kind,
      field = keys.field(self.kind, who), read_holds = keys.read_holds(self.kind, self._keys, who),
      count = 0, guards = {}, run = run }
    client.holds[key] = hold
  end
  local cap = client.max_hold_ms -- nil: the client's
  if max_hold ~= nil then cap = max_hold > 0 and max_hold or nil end -- -1: none
  if hold.count == 0 and cap and cap > 0 then hold.renew_until = sent_at + cap end
  hold.count = hold.count + 1
  hold.token = self.kind == "fenced" and x or nil
  hold.confirmed_until = sent_at + lease
  if lease_ms == -1 then hold.watchdog = true else hold.lease_ms = lease_ms end
  if hold.watchdog and not hold.release_failed then hold.watched = true end
  local started, werr = watchdog.start(client)
  if not started then ngx.log(ngx.ERR, "redlease: ", werr) end
  local g = Guard.new(self, hold)
  if self.kind == "fenced" then g.token = hold.token end
  return g
end

-- acquire{timeout = seconds (nil: forever, 0: one try), lease = seconds (nil: watchdog),
--         max_hold = seconds (nil: the client's, false: none)} -> guard | nil, err
function Lock:acquire(opts)
  return self:_acquire(args.acquire("acquire", opts))
end

local function drop_one(client, hold)
  hold.count = hold.count - 1
  if hold.count <= 0 then client:forget_hold(hold) end
end

-- Releases one hold of `hold` -> true | nil, err, keep (keep: the same release may be retried).
function Lock:_release_one(hold)
  local client = self.client
  local ok, err = client:ready("release")
  if not ok then return nil, err, true end
  if client.holds[hold.key] ~= hold or hold.count <= 0 then
    local _, why = not_owned(self)
    return nil, why, false
  end
  if hold.lost then
    local reason = hold.lost
    drop_one(client, hold)
    return nil, lost_message(self, reason, " while held"), false
  end
  hold.releasing = true
  local request_id = hold.retry_id or client:request_id()
  local lease = hold.watchdog and client.watchdog_ms or hold.lease_ms
  local reply, latch = calls.release(self, hold.field, lease, request_id)
  hold.releasing = false
  if reply == nil then
    -- renewal stops now; calling release again retries this same release (same latch)
    hold.retry_id = request_id
    hold.release_failed = true
    hold.watched = false
    return nil, latch, true
  end
  client:delete_latch(latch)
  if reply == null then
    local reason = now_ms() >= hold.confirmed_until and "expired" or "deleted"
    client:hold_lost(hold, reason)
    drop_one(client, hold)
    return nil, lost_message(self, reason, " while held"), false
  end
  if type(reply) ~= "number" then return nil, "server: unexpected answer to release", true end
  hold.retry_id = nil
  if reply == 1 or hold.count <= 1 then
    client:forget_hold(hold)
  else
    hold.count = hold.count - 1
    if hold.release_failed then -- a retried release went through: renew what remains
      hold.release_failed = false
      if hold.watchdog then hold.watched = true end
    end
  end
  return true
end

-- Releases one hold of the calling run (its newest guard of this lock).
function Lock:release()
  local hold = self:_hold()
  if not hold or #hold.guards == 0 then return not_owned(self) end
  return hold.guards[#hold.guards]:release()
end

local function finish(g, ok, ...)
  local released, err = g:release()
  if not ok then error((...), 0) end -- the body's error, after the release
  if not released then error(err, 0) end
  return ...
end

-- Acquires, calls fn(...), releases; returns fn's results. Raises when the lock cannot be
-- acquired, re-raises fn's error after releasing, and raises when the hold was lost meanwhile.
function Lock:with(fn, opts, ...)
  args.callable("with", fn)
  local g, err = self:_acquire(args.acquire("with", opts))
  if not g then error(err, 0) end
  return finish(g, pcall(fn, ...))
end

-- Server-side queries, one round trip each: value, or nil and an error.
local function query(self, what, cmd)
  local ok, err = self.client:ready(what)
  if not ok then return nil, err end
  return runner.command(self.client, cmd)
end

local function my_field(self)
  local _, run = self:_hold()
  return keys.field(self.kind, self.client:owner_of(run))
end

function Lock:locked()
  if self.kind == "read" or self.kind == "write" then
    local mode, err = query(self, "locked", { "HGET", self.name, "mode" })
    if mode == nil then return nil, err end
    return mode == self.kind
  end
  local n, err = query(self, "locked", { "EXISTS", self.name })
  if n == nil then return nil, err end
  return n > 0
end

function Lock:held()
  local n, err = query(self, "held", { "HEXISTS", self.name, my_field(self) })
  if n == nil then return nil, err end
  return n > 0
end

function Lock:hold_count()
  local n, err = query(self, "hold_count", { "HGET", self.name, my_field(self) })
  if n == nil then return nil, err end
  return tonumber(n) or 0
end

-- Seconds of lease left; false when not locked, math.huge when the key has no expiry.
function Lock:remaining()
  local ms, err = query(self, "remaining", { "PTTL", self.name })
  if ms == nil then return nil, err end
  if ms == -2 then return false end
  if ms == -1 then return math.huge end
  return ms / 1000
end

function Lock:force_unlock()
  local ok, err = self.client:ready("force_unlock")
  if not ok then return nil, err end
  return calls.force_unlock(self)
end

-- Local, no round trip: true and the reason when the calling run's hold was lost while held.
function Lock:lost()
  local hold = self:_hold()
  if hold and hold.lost then return true, hold.lost end
  return false
end

-- Fenced locks: the token of the calling run's latest acquire while it holds the lock.
function Lock:token()
  local hold = self:_hold()
  if hold and hold.count > 0 and not hold.lost then return hold.token end
  return nil
end

return Lock
