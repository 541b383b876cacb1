-- One pub/sub connection per client and worker, run by a timer: a writer loop (the timer's own
-- thread) sends SUBSCRIBE/UNSUBSCRIBE for the channels whose waiters changed, a reader light
-- thread turns Redisson's unlock messages into ngx.semaphore posts. Waiters sleep on their
-- channel's semaphore: "0" lets one of them go, anything else ("1", a read/write unlock) all of
-- them, and so does a (re)subscription, after which each waiter tries again (no release can slip
-- between its try and its wait). The loop stops when nothing was waited on for IDLE_S, and at
-- once when the worker exits with no waiter left.
--
-- Waiters are counted per run (owner.lua): nginx can drop a waiting coroutine (a client abort
-- under lua_check_client_abort, ngx.exit from another light thread, ngx.thread.kill) without
-- its wait ever returning. Each slice the writer removes the waiters of runs that ended, as the
-- watchdog releases their holds, so that a channel is not kept subscribed (nor a graceful quit
-- kept waiting) by a waiter that is gone.
--
-- The reader never uses a read timeout as a clock (each expiry would be an "[error] lua tcp
-- socket read timed out" line under nginx's default lua_socket_log_errors on): the writer stops
-- it with ngx.thread.kill, and sends a PING when it sent nothing for PING_S, so that a read that
-- waits longer than PING_S + SLICE_S + command_timeout means the connection is dead.
local conn = require "redlease.resty.conn"
local owner = require "redlease.resty.owner"
local resp = require "redlease.resty.resp"
local slots = require "redlease.resty.slots"
local semaphore = require "ngx.semaphore"

local Sub = {}
Sub.__index = Sub

local IDLE_S = 10
local SLICE_S = 1 -- how often the writer looks at its stop conditions and for ended waiters
local PING_S = 10 -- the writer sends a PING when it sent nothing for that long
local RECONNECT_MIN_MS, RECONNECT_MAX_MS = 50, 1000
local PING = resp.encode({}, { "PING" })

local exiting, now = ngx.worker.exiting, ngx.now
local max = math.max

-- node: a cluster node (cluster.lua), whose subscriber is sharded (SSUBSCRIBE, smessage...,
-- as Redisson's on Redis 7); nil: the client's one server.
function Sub.new(client, node)
  return setmetatable({ client = client, entries = {}, dirty = {}, wake = semaphore.new(0),
    running = false, connected = false, subscriptions = 0, node = node, sharded = node ~= nil },
    Sub)
end

-- The client's subscriber: this, or on a cluster one per node behind cluster_sub.lua.
function Sub.of(client)
  if client.cluster then return require("redlease.resty.cluster_sub").new(client, Sub) end
  return Sub.new(client)
end

-- A cluster node's subscriber: the slot of e's channel is served elsewhere now (MOVED, a
-- SUNSUBSCRIBE the node sent, or the node cannot be reached). Its waiters wake and join again
-- where the map says (cluster_sub.lua).
local function moved(self, e)
  e.moves = e.moves + 1
  e.inflight = false
  if self.client.cluster then self.client.cluster.stale = true end
  local k = e.waiters - max(e.sema:count(), 0)
  if k > 0 then e.sema:post(k) end
end

local function now_ms() return now() * 1000 end

local function has_waiters(self)
  for _, e in pairs(self.entries) do
    if e.waiters > 0 then return true end
  end
  return false
end

local function poke(self)
  if self.wake:count() <= 0 then self.wake:post(1) end
end

local function mark(self, e)
  self.dirty[e] = true
  poke(self)
end

-- Lets every waiter of e that is in the wait loop go once.
local function wake_all(e)
  local k = e.waiters - max(e.sema:count(), 0)
  if k > 0 then e.sema:post(k) end
end

local function set_subscribed(self, e, on)
  if e.subscribed and not on then self.subscriptions = self.subscriptions - 1 end
  if on and not e.subscribed then self.subscriptions = self.subscriptions + 1 end
  e.subscribed = on
end

local SHARDED = { smessage = "message", ssubscribe = "subscribe", sunsubscribe = "unsubscribe" }

local function handle(self, reply)
  local err = resp.is_error(reply)
  if err and self.sharded then -- "MOVED <slot> ...": an SSUBSCRIBE of a slot served elsewhere
    local slot = tonumber(err:match("^MOVED (%d+)"))
    for channel, e in pairs(self.entries) do
      if e.inflight and (not slot or slots.of(channel) == slot) then
        moved(self, e)
      end
    end
    return
  end
  if type(reply) ~= "table" or #reply < 3 then return end
  local e = self.entries[reply[2]]
  if not e then return end
  local kind = SHARDED[reply[1]] or reply[1]
  if kind == "message" then
    e.messages = e.messages + 1
    if e.observers > 0 then e.watch:post(e.observers) end
    if e.wake_by_count then -- a semaphore's free permits: that many waiters may try (Redisson)
      local k = math.min(tonumber(reply[3]) or 0, e.waiters - max(e.sema:count(), 0))
      if k > 0 then e.sema:post(k) end
    elseif reply[3] == "0" and not e.wake_all then -- a lock's "one may go" (a latch's "0": all)
      if e.sema:count() < e.waiters then e.sema:post(1) end
    else
      wake_all(e)
    end
  elseif kind == "subscribe" then
    if self.outage then
      self.outage = false
      ngx.log(ngx.NOTICE, "redlease: subscriber connection back")
    end
    self.outage_pending = nil
    e.inflight = false
    set_subscribed(self, e, true)
    e.unsubscribed_since = nil
    wake_all(e)
    mark(self, e) -- its waiters may have left meanwhile
  elseif kind == "unsubscribe" then
    local asked = e.inflight
    e.inflight = false
    set_subscribed(self, e, false)
    -- a sharded subscription the node ended (its slot migrated away): the waiters go after it
    if not asked and self.sharded and e.waiters > 0 then return moved(self, e) end
    mark(self, e)
  end
end

-- SUBSCRIBE/UNSUBSCRIBE what the dirty entries need; forgets entries nobody needs.
-- -> true (and whether it sent anything) | nil, err
local function flush(self, sock)
  local parts, n = {}, 0
  local dirty = self.dirty
  self.dirty = {}
  for e in pairs(dirty) do
    if not e.inflight then
      local cmd
      if e.waiters > 0 and not e.subscribed then cmd = "SUBSCRIBE"
      elseif e.waiters == 0 and e.subscribed then cmd = "UNSUBSCRIBE" end
      if cmd and self.sharded then cmd = "S" .. cmd end
      if cmd then
        resp.encode(parts, { cmd, e.channel })
        e.inflight = true
        n = n + 1
      elseif e.waiters == 0 and self.entries[e.channel] == e then
        self.entries[e.channel] = nil
      end
    end
  end
  if n == 0 then return true, false end
  local ok, err = sock:send(parts)
  if not ok then return nil, err end
  return true, true
end

local function call_gone(premature, gone)
  if not premature then gone() end
end

-- Removes the waiters (and observers) of runs that ended without leaving: nginx dropped their
-- coroutine. A bounded collector step first, as the watchdog does, so that a run whose request
-- was freed is found (owner.ended). `gone`: what such a waiter must still undo (a fair lock's
-- place in the queue), run in a timer of its own. At most once per SLICE_S.
local function sweep(self)
  local t = now()
  if t - (self.swept_at or 0) < SLICE_S then return end
  self.swept_at = t
  collectgarbage("step", 64)
  for _, e in pairs(self.entries) do
    for run, w in pairs(e.runs) do
      if owner.ended(run) then
        e.runs[run] = nil
        e.waiters = e.waiters - w.waits
        e.observers = e.observers - w.observes
        mark(self, e)
        if w.gone then ngx.timer.at(0, call_gone, w.gone) end
      end
    end
  end
end

-- Reads until the connection fails (a read timeout included: the writer's PINGs are not
-- answered) or the writer kills this thread.
local function read_loop(self, c)
  while self.connected do
    local reply, err = c.reader:read()
    if reply ~= nil then
      handle(self, reply)
    else
      if err == "timeout" then err = "no answer to PING" end
      self.last_error = "subscriber connection: " .. tostring(err)
      self.connected = false
      poke(self) -- the writer closes up at once, and the waiters hear of it
    end
  end
end

-- The connection is gone: nothing is subscribed any more. Waiters wake, see it, and wait for
-- the resubscription (or give up after the connect and command timeouts).
local function connection_lost(self)
  self.connected = false
  for channel, e in pairs(self.entries) do
    set_subscribed(self, e, false)
    e.inflight = false
    if e.waiters > 0 then
      self.dirty[e] = true
      wake_all(e)
    else
      self.entries[channel] = nil
      self.dirty[e] = nil
    end
  end
end

local function loop(_, self) -- (_: premature; the loop looks at ngx.worker.exiting itself)
  local backoff = RECONNECT_MIN_MS
  local idle_since = now()
  while not self.client.shut do
    sweep(self)
    if has_waiters(self) then
      idle_since = now()
    elseif exiting() or now() - idle_since >= IDLE_S then
      break
    end
    if not has_waiters(self) then
      self.wake:wait(SLICE_S)
    else
      local c, err = conn.open(self.client, nil, self.node)
      if not c then
        self.last_error = err
        if self.outage_pending and has_waiters(self) and not self.outage then
          self.outage = true
          ngx.log(ngx.ERR, "redlease: ", self.outage_pending, "; then ", err,
            "; waiters resubscribe once Redis answers")
        end
        self.outage_pending = nil
        if self.sharded then -- the node may be gone for good (a failover): ask the map again
          for _, e in pairs(self.entries) do
            if e.waiters > 0 then moved(self, e) end
          end
        end
        ngx.sleep(backoff / 1000)
        backoff = math.min(backoff * 2, RECONNECT_MAX_MS)
      else
        backoff = RECONNECT_MIN_MS
        self.outage_pending = nil -- (the master, moved or not, answers)
        local client = self.client
        c.sock:settimeouts(client.connect_ms, client.command_ms,
          (PING_S + SLICE_S) * 1000 + client.command_ms)
        c.reader.timeout_ms = nil -- (not the one conn.open set)
        self.connected = true
        for _, e in pairs(self.entries) do self.dirty[e] = true end
        local reader = ngx.thread.spawn(read_loop, self, c)
        local sent_at = now()
        local epoch = c.ep.epoch or 0
        while self.connected and not client.shut and epoch == client:master_epoch() do
          sweep(self)
          local ok, sent = flush(self, c.sock)
          if ok and not sent and now() - sent_at >= PING_S then
            ok, sent = c.sock:send(PING)
          end
          if not ok then
            self.last_error = "subscriber connection: " .. tostring(sent)
            break
          end
          if sent then sent_at = now() end
          if has_waiters(self) then
            idle_since = now()
          elseif exiting() or now() - idle_since >= IDLE_S then
            if self.subscriptions == 0 then break end
          end
          self.wake:wait(SLICE_S)
        end
        self.connected = false
        if not ngx.thread.kill(reader) then ngx.thread.wait(reader) end -- (it ended first)
        c.sock:close()
        if epoch ~= client:master_epoch() or client.resolver and not self.outage then
          -- the master moved (sentinel.lua), or the connection to it dropped, which a failover
          -- does too: said at error level only if the master the sentinels name cannot be
          -- reached (below)
          self.outage_pending = self.outage_pending or self.last_error or "the master moved"
        elseif not client.shut and has_waiters(self) and not self.outage then
          -- once per outage (a stale connection from the pool fails the same way): said
          -- again only after a subscription went through
          self.outage = true
          ngx.log(ngx.ERR, "redlease: ", self.last_error or "subscriber connection lost",
            "; waiters resubscribe once Redis answers")
        end
        connection_lost(self)
      end
    end
  end
  -- no yield from the last check to here: a join either saw running or starts a new loop
  self.running = false
  connection_lost(self)
end

local function ensure_running(self)
  if self.running then return true end
  local ok, err = ngx.timer.at(0, loop, self)
  if not ok then return nil, "memory: cannot start the subscriber timer: " .. tostring(err) end
  self.running = true
  return true
end

-- The master changed (failover.lua): leave it now, resubscribe on the new one.
function Sub:master_moved()
  poke(self)
end

-- A waiter of `channel` arrives: run `run` (owner.run()). gone: nil, or a function to call
-- (in a timer) if the run ends without leaving. -> entry | nil, err.
function Sub:join(channel, run, gone)
  local e = self.entries[channel]
  if not e then
    e = { channel = channel, waiters = 0, sema = semaphore.new(0), subscribed = false,
      inflight = false, messages = 0, observers = 0, runs = {}, sub = self, moves = 0 }
    self.entries[channel] = e
  end
  local w = e.runs[run]
  if not w then
    w = { waits = 0, observes = 0 }
    e.runs[run] = w
  end
  w.waits = w.waits + 1
  w.gone = gone
  e.waiters = e.waiters + 1
  local ok, err = ensure_running(self)
  if not ok then
    Sub.leave(self, e, run)
    return nil, err
  end
  mark(self, e)
  return e
end

-- Sleeps until a wake-up of e or until_ms (ngx.now() ms; nil: no limit). -> true (woken),
-- false (until_ms passed) or nil, err (no subscription for longer than the timeouts).
function Sub:wait(e, until_ms)
  local client = self.client
  local moves = e.moves
  while true do
    if e.moves ~= moves then return true end -- (cluster_sub.lua joins it again elsewhere)
    if client.shut then return nil, "closed: the client is closed" end
    local t = now_ms()
    if until_ms and t >= until_ms then return false end
    local wake_at = until_ms
    if not e.subscribed then
      e.unsubscribed_since = e.unsubscribed_since or t
      local limit = e.unsubscribed_since + client.connect_ms + client.command_ms
      if t >= limit then
        return nil, "connection: cannot subscribe to lock notifications: "
          .. (self.last_error or "no answer")
      end
      if not wake_at or limit < wake_at then wake_at = limit end
    end
    local secs = wake_at and (wake_at - t) / 1000 or 3600
    if secs > 0 then
      local ok, err = e.sema:wait(secs)
      -- a wake-up while unsubscribed (the connection was lost) only starts the clock above: the
      -- waiter tries again once the resubscription wakes it
      if ok and (e.subscribed or e.moves ~= moves) then return true end
      if not ok and err ~= "timeout" then return nil, "memory: " .. tostring(err) end
    end
    ngx.update_time()
  end
end

-- Messages read on `channel` so far when it is subscribed for waiters of this client (a message
-- published from now on reaches this subscriber), else nil (a subscription being left may miss
-- it).
function Sub:messages_read(channel)
  local e = self.entries[channel]
  return e and e.subscribed and not e.inflight and e.waiters > 0 and e.messages or nil
end

-- For a waiter that gives way to the one its release woke (as the C core's rl_sub_observe):
-- sleeps until a message on e's channel past the `floor`-th (or past the ones read so far,
-- when more), whoever it wakes, without taking that wake-up from a waiter of this client; or
-- until until_ms. -> true (such a message came), false (until_ms passed) or nil, err.
function Sub:observe(e, until_ms, floor, run)
  local seen = max(e.messages, floor or 0)
  e.watch = e.watch or semaphore.new(0)
  local w = e.runs[run]
  if not w then return nil, "memory: observe before join" end
  e.observers = e.observers + 1
  w.observes = w.observes + 1
  local ok, err = true, nil
  while e.messages <= seen and not self.client.shut do
    local secs = (until_ms - now_ms()) / 1000
    if secs <= 0 then break end
    ok, err = e.watch:wait(secs) -- a post left by an observer that gave up only wakes it early
    if not ok and err ~= "timeout" then break end
    ok = true
    ngx.update_time()
  end
  if e.runs[run] == w then -- (else the run was found ended meanwhile, and is not counted)
    e.observers = e.observers - 1
    w.observes = w.observes - 1
  end
  if not ok then return nil, "memory: " .. tostring(err) end
  if self.client.shut then return nil, "closed: the client is closed" end
  return e.messages > seen
end

-- The waiter of run `run` leaves: its unused wake-ups go, and the channel is unsubscribed when
-- it was the last (not awaited: the next waiter of the name finds the entry still there).
function Sub:leave(e, run)
  local w = e.runs[run]
  if not w then return end -- found ended already (cannot happen to a run that still runs)
  w.waits = w.waits - 1
  if w.waits == 0 then e.runs[run] = nil end
  e.waiters = e.waiters - 1
  local extra = e.sema:count() - e.waiters
  while extra > 0 and e.sema:wait(0) do extra = extra - 1 end
  mark(self, e)
end

return Sub
