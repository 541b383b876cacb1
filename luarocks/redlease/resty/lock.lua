-- A lock of any Redisson kind ("lock", "fenced", "fair", "read", "write") on one name of one
-- client: acquire with waiting, release through the unlock latch, the queries. The flow is the
-- C core's (csrc/core/lock.c); every wait is a cosocket or ngx.semaphore wait, so the worker
-- serves other requests meanwhile.
local args = require "redlease.args"
local calls = require "redlease.resty.calls"
local failover = require "redlease.resty.failover"
local Guard = require "redlease.resty.guard"
local keys = require "redlease.resty.keys"
local inspect = require "redlease.resty.inspect"
local lease_ops = require "redlease.resty.lease_ops"
local owner = require "redlease.resty.owner"
local resp = require "redlease.resty.resp"
local runner = require "redlease.resty.runner"
local takeback = require "redlease.resty.takeback"
local validity = require "redlease.resty.validity"
local watchdog = require "redlease.resty.watchdog"
local with = require "redlease.with"
local new_tab = require "table.new"

local Lock = {}
Lock.__index = Lock

local null = resp.null
local forget_lost_acquire -- (below the release helpers it shares)
local FAIR_RECHECK_MS = 100 -- a fair waiter told "0 ms" (another is first in line) looks again
-- A clock read afresh without ngx.update_time()'s cost (it formats nginx's time strings), for
-- how long an acquire took; lua-resty-core has it since 0.1.23 (OpenResty 1.21.4).
local has_core_time, core_time = pcall(require, "resty.core.time")
local elapsed_clock_ms = has_core_time and core_time.monotonic_msec or function()
  ngx.update_time()
  return ngx.now() * 1000
end

local function now_ms()
  return ngx.now() * 1000
end

-- What a lock object needs of its name (its Redis keys, its name in messages, its key in the
-- holds table), made once per name of each kind in this worker: a request that makes a lock
-- object per call builds no key. Bounded: past NAMES_KEPT names of a kind it starts afresh, and
-- a name longer than NAME_KEPT_BYTES is not kept.
local NAMES_KEPT, NAME_KEPT_BYTES = 1000, 256
local by_name, names_kept = {}, {}

local function of_name(kind, name)
  if #name > NAME_KEPT_BYTES then
    return { keys = keys.of(kind, name), shown = keys.shown(name), key = kind .. ":" .. name }
  end
  local cache = by_name[kind]
  local got = cache and cache[name]
  if got then return got end
  if not cache or names_kept[kind] >= NAMES_KEPT then
    cache = {}
    by_name[kind], names_kept[kind] = cache, 0
  end
  got = { keys = keys.of(kind, name), shown = keys.shown(name), key = kind .. ":" .. name }
  cache[name] = got
  names_kept[kind] = names_kept[kind] + 1
  return got
end

-- client: the internal client (client.lua); lock.client is the public one, as in the rock.
function Lock.new(client, name, kind)
  if client.cluster then client.cluster.check_name(name, "lock") end
  local n = of_name(kind, name)
  return setmetatable({ client = client.public, _core = client, name = name, kind = kind,
    _keys = n.keys, _shown = n.shown, _key = n.key }, Lock)
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

-- The calling run's hold of this lock, or nil (and the run, and the hold's key). p: the phase,
-- when known (client:ready() answers it).
function Lock:_hold(p)
  local run = owner.run(p)
  local key = self._key .. "\0" .. run.id
  return self._core.holds[key], run, key
end

-- -> as calls.acquire (got, token or wait hint or err, reentered or unanswered), and when it
-- was sent.
local function try_once(self, who, lease, queue, window, fresh)
  local sent_at = now_ms()
  -- just after a failover nothing new is granted (failover.lua); a re-entry goes ahead
  local client = self._core
  local paused = fresh and failover.grace_left(client, self.name) or 0
  if paused > 0 then return false, paused, sent_at, nil, true end
  local masters_seen = client.counters.master_changes
  local sending = elapsed_clock_ms()
  local got, x, flag = calls.acquire(self, who, lease, queue, window)
  if got and fresh and client.counters.master_changes ~= masters_seen then
    -- the call itself followed a new master (its connection asked the sentinels, or a MOVED
    -- answer moved its slot): what it was granted there goes back, the grace holds for it too
    ngx.update_time()
    paused = failover.grace_left(client, self.name)
    if paused > 0 then
      calls.undo_acquire(self, who, lease)
      return false, paused, sent_at, nil, true
    end
  end
  if got and not flag then
    -- answered after the lease it granted had ended (the worker was stopped between sending
    -- and reading, or the answer waited that long): another owner may have been granted it
    -- since, so it is given back and the try goes on as refused (the C core's lock.c)
    if elapsed_clock_ms() - sending >= lease then -- (within the drift margin: acquired, in doubt)
      calls.undo_acquire(self, who, lease)
      return false, 0, sent_at, nil, "late"
    end
  end
  if got == false and self.kind == "fair" and x < FAIR_RECHECK_MS then x = FAIR_RECHECK_MS end
  return got, x, sent_at, flag
end

-- Leaves the lock to the waiter our release woke (handover.lua), subscribed: until that
-- waiter's own release message (the channel's next message past `floor`, which counts our
-- release's own) or `until_ms`. It observes: the message that woke that waiter, when it is a
-- run of this client, stays that waiter's. -> true, or nil, err
local function yield_to_woken(sub, entry, until_ms, floor, run)
  local ok, err = sub:observe(entry, until_ms, floor, run)
  if ok == nil then return nil, err end
  return true -- the message came, or the grace ran out: try now
end

-- Subscribe, try again, then sleep until a release message or the holder's lease end, until
-- acquired, the deadline, or an error. yield_until: first leave the lock to a waiter our
-- release woke until then. The waiter counts for `run`: should nginx end the run while it waits
-- (its coroutine is dropped, this function never returns), the subscriber removes it, and a
-- fair waiter's place in the queue is given up.
local function wait_and_retry(self, run, who, lease, window, deadline, yield_until, floor, fresh)
  local sub = self._core.sub
  local gone
  if self.kind == "fair" then gone = function() calls.leave_queue(self, who, window) end end
  local entry, err = sub:join(keys.wait_channel(self.kind, self._keys, who), run, gone)
  if not entry then return nil, err end
  if yield_until then
    local ok, yerr = yield_to_woken(sub, entry, deadline and math.min(deadline, yield_until)
      or yield_until, floor, run)
    if not ok then
      sub:leave(entry, run)
      return nil, yerr
    end
  end
  local got, x, sent_at, reentered, paused
  while true do
    -- (after subscribing: no wake-up missed)
    got, x, sent_at, reentered, paused = try_once(self, who, lease, true, window, fresh)
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
  sub:leave(entry, run)
  return got, x, sent_at, reentered, paused
end

-- Before an acquire: the run's hold must be healthy, and a release of it that failed on the
-- network is settled first (the same request again, answered from its unlock latch if Redis
-- did it), so that the acquire starts from what Redis holds and the new hold is renewed.
local function check_before_acquire(self, hold, key, wait_ms)
  local client = self._core
  -- an earlier acquire of this run whose answer was lost is being taken back: wait for that,
  -- or its release could take the hold this acquire gets
  if client.takebacks[key] then
    ngx.update_time()
    local ok, err = takeback.settled(client, key, now_ms() + (wait_ms >= 0 and
      math.max(wait_ms, client.command_ms) or client.watchdog_ms), self._shown)
    if not ok then return nil, err end
  end
  if not hold then return true end
  if hold.lost then return nil, lost_message(self, hold.lost, "; release it first") end
  if not hold.release_failed then return true end
  local failed = hold.retry_guard
  local ok, err, keep = self:_release_one(hold, true)
  if failed and (ok or not keep) then failed:_forget() end -- that guard's release is settled
  if not ok then return nil, err end
  return true
end

function Lock:_acquire(lease_ms, wait_ms, max_hold)
  local client = self._core
  local ok, err = client:ready("acquire")
  if not ok then return nil, err end
  local hold, run, key = self:_hold(ok)
  ok, err = check_before_acquire(self, hold, key, wait_ms)
  if not ok then return nil, err end
  local who = client:owner_of(run)
  local lease = lease_ms > 0 and lease_ms or client.watchdog_ms
  local window = wait_ms > 0 and wait_ms or client.fair_wait_ms
  ngx.update_time()
  local start = now_ms()
  -- only an acquire that may wait gives way to a waiter our release woke: its chance first
  local yield_until, floor
  if wait_ms ~= 0 then yield_until, floor = client.handovers:until_ms(self._key, start) end
  local fresh = not hold or hold.count == 0 -- a failover's grace applies (failover.lua)
  -- (reentered: unanswered when got nil; paused: refused by the failover grace, or "late": the
  -- grant answered after its lease had ended, given back)
  local got, x, sent_at, reentered, paused = false, -1, nil, nil, nil
  if not yield_until then
    got, x, sent_at, reentered, paused = try_once(self, who, lease, wait_ms ~= 0, window, fresh)
  end
  if got == false and wait_ms ~= 0 then
    got, x, sent_at, reentered, paused = wait_and_retry(self, run, who, lease, window,
      wait_ms > 0 and start + wait_ms or nil, yield_until, floor, fresh)
  end
  -- a fair waiter that did not get the lock leaves the queue, whatever stopped it
  if got ~= true and wait_ms ~= 0 and self.kind == "fair" then
    calls.leave_queue(self, who, window)
  end
  if got == nil then
    if reentered then forget_lost_acquire(self, run, who, lease, sent_at, x) end
    return nil, x
  end
  if got == false and paused == "late" then -- the C rock's words (csrc/core/lock.c)
    return nil, ('timeout: lock "%s" was granted, but the answer came after the lease it granted '
      .. 'had ended (was this process paused?): given back, not acquired'):format(self._shown)
  end
  if got == false and paused then -- the C rock's words (csrc/core/lock.c)
    return nil, ('timeout: lock "%s" is not granted yet: this client followed a new master, and '
      .. 'grants nothing for %d ms more (failover_grace) so that a holder on the old one is '
      .. 'told first'):format(self._shown, math.ceil(x))
  end
  if got == false then -- the C rock's words (csrc/core/lock.c): how long it waited
    return nil, ('timeout: lock "%s" is held by another owner%s'):format(self._shown,
      wait_ms > 0 and ("; not acquired within %.3f s"):format(wait_ms / 1000) or "")
  end
  -- record the hold (no yield from the answer to here: renewal starts with the hold)
  hold = client.holds[key]
  if hold and hold.count > 0 and not hold.lost and not reentered then
    -- Redis granted it afresh: the hold this run had was gone (deleted, expired) before the
    -- watchdog could tell
    ngx.update_time()
    client:hold_lost(hold, now_ms() >= hold.confirmed_until and "expired" or "deleted")
  end
  if hold and hold.lost then
    -- lost while this acquire was on the wire, or just found so: what Redis granted now is
    -- not part of a hold that is renewed. Take it back; the caller must release first.
    local reason = hold.lost
    calls.undo_acquire(self, who, lease)
    return nil, lost_message(self, reason, "; release it first")
  end
  if not hold then
    -- (the fields every acquire and release sets are there from the start: a table that grows
    -- past its size is rehashed, and sixteen fit; the others are set only when needed)
    hold = { key = key, lock = self, name = self.name, shown = self._shown, kind = self.kind,
      field = keys.field(self.kind, who), read_holds = keys.read_holds(self.kind, self._keys, who),
      count = 0, guards = new_tab(1, 0), run = run, confirmed_until = 0, master = false,
      lease_ms = false, watchdog = false, watched = false, releasing = false }
    client.holds[key] = hold
  end
  local cap = client.max_hold_ms -- nil: the client's
  if max_hold ~= nil then cap = max_hold > 0 and max_hold or nil end -- -1: none
  if hold.count == 0 and cap and cap > 0 then hold.renew_until = sent_at + cap end
  hold.count = hold.count + 1
  if self.kind == "fenced" then hold.token = x end
  validity.confirmed(hold, sent_at, lease)
  hold.master = client.answered_by -- the master that granted it (runner.lua)
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

-- Whether another hold of the same run counts in the same Redis field: the reentrant, fenced,
-- fair and read kinds on one name share the owner's field (the write side has its own).
local SHARED_FIELD = { "lock", "fenced", "fair", "read" }

local function field_shared(client, hold)
  if hold.kind == "write" then return false end
  for _, kind in ipairs(SHARED_FIELD) do
    if kind ~= hold.kind then
      local other = client.holds[kind .. ":" .. hold.name .. "\0" .. hold.run.id]
      if other and other.count > 0 then return true end
    end
  end
  return false
end

-- An acquire whose answer was lost: Redis may have granted it (a stalled Redis runs it when it
-- wakes). When the run counted nothing in that Redis field, nobody would release it: it is
-- taken back from a timer (takeback.lua). Otherwise the run's last release removes the extra
-- count (release_stray_holds), or the watchdog's release once the run ended.
function forget_lost_acquire(self, run, who, lease, sent_at, why)
  local client = self._core
  local key = self._key .. "\0" .. run.id
  local hold = client.holds[key]
  if hold and hold.count > 0 then return end
  if field_shared(client, { kind = self.kind, name = self.name, run = run }) then return end
  takeback.start(self, key, keys.field(self.kind, who), lease, sent_at + lease, why, false)
end

-- The last hold was released and Redis answered "still held": it counts more holds of this
-- owner than this client knows (an acquire whose answer was lost on the network). Left alone
-- they would shut every other owner out. Remove them, and say so.
local function release_stray_holds(self, hold, lease)
  local still_held, err, counted = calls.release_fully(self, hold.field, lease)
  ngx.log(ngx.WARN, ('redlease: lock "%s": Redis held %d more hold(s) of this owner than this '
    .. "client knew (an acquire whose answer was lost); %s"):format(self._shown,
    (still_held or counted) + 1, still_held and "released them"
    or "could not release them, they expire by their lease (" .. tostring(err) .. ")"))
end

-- Release of a hold already lost: nothing to renew, but when the loss came from this side
-- (max_hold, or Redis unreachable until the lease ran out) the key may still be this owner's:
-- it is freed now instead of blocking others until it expires.
local function release_lost(self, hold, lease)
  local client, reason = self._core, hold.lost
  if not hold.freed and (reason == "max_hold" or reason == "unreachable") then
    hold.freed = true
    hold.releasing = owner.run() -- the releasing run: the mark is void once it ended
    calls.release_fully(self, hold.field, lease)
    hold.releasing = false
  end
  drop_one(client, hold)
  return nil, lost_message(self, reason, " while held"), false
end

-- Releases one hold of `hold` -> true | nil, err, keep (keep: the same release may be retried).
-- guard: the guard being released (kept with a failed release, which an acquire settles).
-- settling: an acquire settles this run's failed release.
function Lock:_release_one(hold, settling, guard)
  local client = self._core
  local ok, err = client:ready("release")
  if not ok then return nil, err, true end
  if client.holds[hold.key] ~= hold or hold.count <= 0 then
    local _, why = not_owned(self)
    return nil, why, false
  end
  local lease = hold.watchdog and client.watchdog_ms or hold.lease_ms
  if hold.lost then return release_lost(self, hold, lease) end
  hold.releasing = owner.run(ok) -- (nginx may drop this run while the release is on the wire)
  local request_id = hold.retry_id or client:request_id()
  -- the messages this client's subscription of the channel has read: a re-acquire that gives
  -- way tells this release's own message from the woken waiter's (none when nobody here waits)
  local before = client.handover_grace_ms > 0 and client.sub.subscriptions > 0
    and client.sub:messages_read(keys.wait_channel(self.kind, self._keys, hold.field)) or nil
  local reply, latch = calls.release(self, hold.field, lease, request_id)
  hold.releasing = false
  if reply == nil then
    -- renewal stops now; the next release (or acquire) of this run retries this same release
    -- (same latch)
    hold.retry_id = request_id
    hold.retry_guard = guard or hold.retry_guard
    hold.release_failed = true
    hold.watched = false
    return nil, latch, true
  end
  client:delete_latch(latch)
  if reply == null then
    if settling and hold.count <= 1 then -- already released, its latch expired since
      client:forget_hold(hold)
      return true
    end
    ngx.update_time()
    local reason = now_ms() >= hold.confirmed_until and "expired" or "deleted"
    client:hold_lost(hold, reason)
    drop_one(client, hold)
    return nil, lost_message(self, reason, " while held"), false
  end
  if type(reply) ~= "number" then return nil, "server: unexpected answer to release", true end
  local was_failed = hold.release_failed
  if was_failed then hold.retry_id, hold.retry_guard, hold.release_failed = nil, nil, false end
  if reply == 2 and client.handover_grace_ms > 0 then -- and its message woke someone
    ngx.update_time()
    client.handovers:note(self._key, now_ms() + client.handover_grace_ms, before and before + 1)
  end
  if hold.count <= 1 then
    client:forget_hold(hold) -- no hold of this run is left
    if reply == 0 and not field_shared(client, hold) then release_stray_holds(self, hold, lease) end
    return true
  end
  hold.count = hold.count - 1
  if reply >= 1 then -- 1 or 2 (released; 2: its message woke someone)
    -- Redis had no other hold of this owner: the ones this run still counts are gone
    client:hold_lost(hold, "deleted")
  elseif was_failed and hold.watchdog then -- a retried release went through: renew the rest
    hold.watched = true
  end
  return true
end

-- Releases one hold of the calling run (its newest guard of this lock).
function Lock:release()
  local hold = self:_hold()
  if not hold or #hold.guards == 0 then return not_owned(self) end
  return hold.guards[#hold.guards]:release()
end

-- Acquires, calls fn(...), releases; returns fn's results (redlease/with.lua).
Lock.with = with.lock

-- Fixed-lease holds of the calling run (the rock's extend/reacquire, lease_ops.lua):
-- extend(seconds, {replace = true}) adds to the lease left (replace: sets it); reacquire()
-- gives the hold its own lease again. true, or nil and an error ("argument: ..." in watchdog
-- mode, "not_owned: ...", "lost: ..." when Redis no longer has it).
function Lock:extend(seconds, opts)
  local ms = args.seconds("extend", "seconds", seconds)
  if opts ~= nil and type(opts) ~= "table" then
    error("bad argument #2 to 'extend' (table expected, got " .. type(opts) .. ")", 2)
  end
  return lease_ops.extend(self, ms, opts and opts.replace or false)
end

function Lock:reacquire() return lease_ops.reacquire(self) end

-- Who holds it, from Redis: a list of {client_id, context, count, lease, write, local, field}
-- (the owners of redlease.inspect; context: the holder's run number when it is a request).
function Lock:owner()
  local ok, err = self._core:ready("owner")
  if not ok then return nil, err end
  local found
  found, err = inspect.key(self._core, self.name)
  if not found then return nil, err end
  return found.owners
end

-- Hand-off: the calling run's hold becomes a token ("<client id>:<run>") and is let go of here
-- (its renewal stops, its guards close without releasing); any request, timer or process then
-- frees it with lock:release_token(token). token, or nil and "not_owned: ...".
function Lock:hand_off() return lease_ops.hand_off(self) end

-- Releases every hold of the owner a hand-off token names: true, or nil and "not_owned: ..."
-- when that owner holds none.
function Lock:release_token(token)
  args.string("release_token", "token", token)
  return lease_ops.release_token(self, token)
end

-- Server-side queries, one round trip each: value, or nil and an error.
local function query(self, what, cmd)
  local ok, err = self._core:ready(what)
  if not ok then return nil, err end
  return runner.command(self._core, cmd)
end

local function my_field(self)
  local _, run = self:_hold()
  return keys.field(self.kind, self._core:owner_of(run))
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
  local ok, err = self._core:ready("force_unlock")
  if not ok then return nil, err end
  return calls.force_unlock(self)
end

-- Local, no round trip: true and the reason when the calling run's hold was lost while held.
function Lock:lost()
  local hold = self:_hold()
  if hold and hold.lost then return true, hold.lost end
  return false
end

-- Local, no round trip: seconds for which the calling run's hold is still guaranteed on this
-- worker's clock; 0 when nothing is (validity.lua).
function Lock:valid_for()
  local hold = self:_hold()
  ngx.update_time()
  local now = ngx.now() * 1000
  local _, valid_until = validity.state(self._core, hold, now)
  return valid_until > now and (valid_until - now) / 1000 or 0
end

-- Local: true while a renewal failed or is late; the hold may still be valid.
function Lock:in_doubt()
  ngx.update_time()
  return (validity.state(self._core, (self:_hold()), ngx.now() * 1000)) == "in_doubt"
end

-- A guard before a critical write, local: the seconds left when held and guaranteed for at least
-- opts.min_left seconds (default 0); else nil and "in_doubt: ...", "lost: ..." or
-- "not_owned: ..." (the rock's words).
function Lock:check(opts)
  local min_left = args.check(opts)
  local hold = self:_hold()
  ngx.update_time()
  local now = ngx.now() * 1000
  local state, valid_until = validity.state(self._core, hold, now)
  local left = valid_until > now and valid_until - now or 0
  if state == "none" then
    return nil, ('not_owned: lock "%s" is not held by this request'):format(self._shown)
  elseif state == "lost" then
    return nil, ('lost: the hold of lock "%s" was lost (%s)'):format(self._shown,
      hold.lost or "expired")
  elseif state == "in_doubt" then
    return nil, ('in_doubt: the hold of lock "%s" is in doubt (a renewal failed or is late): '
      .. "guaranteed for %d ms more at most"):format(self._shown, left)
  elseif left < min_left then
    return nil, ('in_doubt: the hold of lock "%s" is guaranteed for %d ms more, less than the '
      .. "%d ms asked"):format(self._shown, left, min_left)
  end
  return left / 1000
end

-- Fenced locks: the token of the calling run's latest acquire while it holds the lock.
function Lock:token()
  local hold = self:_hold()
  if hold and hold.count > 0 and not hold.lost then return hold.token end
  return nil
end

return Lock
