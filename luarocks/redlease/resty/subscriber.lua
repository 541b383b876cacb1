-- One pub/sub connection per client and worker, run by a timer: a writer loop (the timer's own
-- thread) sends SUBSCRIBE/UNSUBSCRIBE for the channels whose waiters changed, a reader light
-- thread turns Redisson's unlock messages into ngx.semaphore posts. Waiters sleep on their
-- channel's semaphore: "0" lets one of them go, anything else ("1", a read/write unlock) all of
-- them, and so does a (re)subscription, after which each waiter tries again (no release can slip
-- between its try and its wait). The loop stops when nothing was waited on for IDLE_S, and at
-- once when the worker exits with no waiter left.
local conn = require "redlease.resty.conn"
local resp = require "redlease.resty.resp"
local semaphore = require "ngx.semaphore"

local Sub = {}
Sub.__index = Sub

local IDLE_S = 10
local SLICE_S = 1 -- how often the loops look at their stop conditions
local RECONNECT_MIN_MS, RECONNECT_MAX_MS = 50, 1000

local exiting, now = ngx.worker.exiting, ngx.now
local max = math.max

function Sub.new(client)
  return setmetatable({ client = client, entries = {}, dirty = {}, wake = semaphore.new(0),
    running = false, connected = false, subscriptions = 0 }, Sub)
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

local function handle(self, reply)
  if type(reply) ~= "table" or #reply < 3 then return end
  local e = self.entries[reply[2]]
  if not e then return end
  local kind = reply[1]
  if kind == "message" then
    e.messages = e.messages + 1
    if e.observers > 0 then e.watch:post(e.observers) end
    if reply[3] == "0" then
      if e.sema:count() < e.waiters then e.sema:post(1) end
    else
      wake_all(e)
    end
  elseif kind == "subscribe" then
    e.inflight = false
    set_subscribed(self, e, true)
    e.unsubscribed_since = nil
    wake_all(e)
    mark(self, e) -- its waiters may have left meanwhile
  elseif kind == "unsubscribe" then
    e.inflight = false
    set_subscribed(self, e, false)
    mark(self, e)
  end
end

-- SUBSCRIBE/UNSUBSCRIBE what the dirty entries need; forgets entries nobody needs.
local function flush(self, sock)
  local parts, n = {}, 0
  local dirty = self.dirty
  self.dirty = {}
  for e in pairs(dirty) do
    if not e.inflight then
      local cmd
      if e.waiters > 0 and not e.subscribed then cmd = "SUBSCRIBE"
      elseif e.waiters == 0 and e.subscribed then cmd = "UNSUBSCRIBE" end
      if cmd then
        resp.encode(parts, { cmd, e.channel })
        e.inflight = true
        n = n + 1
      elseif e.waiters == 0 and self.entries[e.channel] == e then
        self.entries[e.channel] = nil
      end
    end
  end
  if n == 0 then return true end
  return sock:send(parts)
end

local function read_loop(self, c)
  while self.connected do
    local reply, err = c.reader:read()
    if reply ~= nil then
      handle(self, reply)
    elseif err ~= "timeout" then
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

local function run(_, self) -- (_: premature; the loop looks at ngx.worker.exiting itself)
  local backoff = RECONNECT_MIN_MS
  local idle_since = now()
  while not self.client.shut do
    if has_waiters(self) then
      idle_since = now()
    elseif exiting() or now() - idle_since >= IDLE_S then
      break
    end
    if not has_waiters(self) then
      self.wake:wait(SLICE_S)
    else
      local c, err = conn.open(self.client)
      if not c then
        self.last_error = err
        ngx.sleep(backoff / 1000)
        backoff = math.min(backoff * 2, RECONNECT_MAX_MS)
      else
        backoff = RECONNECT_MIN_MS
        c.sock:settimeouts(self.client.connect_ms, self.client.command_ms, SLICE_S * 1000)
        self.connected = true
        for _, e in pairs(self.entries) do self.dirty[e] = true end
        local reader = ngx.thread.spawn(read_loop, self, c)
        while self.connected and not self.client.shut do
          local ok, serr = flush(self, c.sock)
          if not ok then
            self.last_error = "subscriber connection: " .. tostring(serr)
            break
          end
          if has_waiters(self) then
            idle_since = now()
          elseif exiting() or now() - idle_since >= IDLE_S then
            if self.subscriptions == 0 then break end
          end
          self.wake:wait(SLICE_S)
        end
        self.connected = false
        ngx.thread.wait(reader) -- it stops within one read slice
        c.sock:close()
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
  local ok, err = ngx.timer.at(0, run, self)
  if not ok then return nil, "memory: cannot start the subscriber timer: " .. tostring(err) end
  self.running = true
  return true
end

-- A waiter of `channel` arrives -> entry | nil, err.
function Sub:join(channel)
  local e = self.entries[channel]
  if not e then
    e = { channel = channel, waiters = 0, sema = semaphore.new(0), subscribed = false,
      inflight = false, messages = 0, observers = 0 }
    self.entries[channel] = e
  end
  e.waiters = e.waiters + 1
  local ok, err = ensure_running(self)
  if not ok then
    e.waiters = e.waiters - 1
    return nil, err
  end
  mark(self, e)
  return e
end

-- Sleeps until a wake-up of e or until_ms (ngx.now() ms; nil: no limit). -> true (woken),
-- false (until_ms passed) or nil, err (no subscription for longer than the timeouts).
function Sub:wait(e, until_ms)
  local client = self.client
  while true do
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
      if ok and e.subscribed then return true end
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
function Sub:observe(e, until_ms, floor)
  local seen = max(e.messages, floor or 0)
  e.watch = e.watch or semaphore.new(0)
  e.observers = e.observers + 1
  local ok, err = true, nil
  while e.messages <= seen and not self.client.shut do
    local secs = (until_ms - now_ms()) / 1000
    if secs <= 0 then break end
    ok, err = e.watch:wait(secs) -- a post left by an observer that gave up only wakes it early
    if not ok and err ~= "timeout" then break end
    ok = true
    ngx.update_time()
  end
  e.observers = e.observers - 1
  if not ok then return nil, "memory: " .. tostring(err) end
  if self.client.shut then return nil, "closed: the client is closed" end
  return e.messages > seen
end

-- The waiter leaves: its unused wake-ups go, and the channel is unsubscribed when it was the
-- last (not awaited: the next waiter of the name finds the entry still there).
function Sub:leave(e)
  e.waiters = e.waiters - 1
  local extra = e.sema:count() - e.waiters
  while extra > 0 and e.sema:wait(0) do extra = extra - 1 end
  mark(self, e)
end

return Sub
