-- A client in one nginx worker: the endpoint and options, the worker's identity (a UUID made in
-- the worker, never inherited from the master), the table of holds, the subscriber and the
-- watchdog, and the unlock latches waiting to be deleted.
local args = require "redlease.args"
local conn = require "redlease.resty.conn"
local owner = require "redlease.resty.owner"
local phase = require "redlease.resty.phase"
local pipe = require "redlease.resty.pipe"
local encode = require("redlease.resty.resp").encode
local calls = require "redlease.resty.calls"
local cluster = require "redlease.resty.cluster"
local Handovers = require "redlease.resty.wake_grace"
local Latch = require "redlease.resty.latch"
local Lock = require "redlease.resty.lock"
local MultiLock = require "redlease.resty.multilock"
local Semaphore = require "redlease.resty.semaphore"
local Sub = require "redlease.resty.subscriber"

local Client = {}
Client.__index = Client

local new_tab = require "table.new"

local LATCH_FLUSH_S = 0.1 -- latches not carried by another command by then get their own DEL

-- rl_options_init's defaults, by option name (generated from the core's options catalogue)
local DEFAULT = {}
for _, row in ipairs(require("redlease.resty.scripts")._OPTIONS) do
  DEFAULT[row.name] = row.default
end

function Client.new(ep, o)
  local self = setmetatable({
    ep = ep,
    connect_ms = o.connect_timeout or DEFAULT.connect_timeout,
    command_ms = o.command_timeout or DEFAULT.command_timeout,
    watchdog_ms = o.watchdog_timeout or DEFAULT.watchdog_timeout,
    max_hold_ms = o.max_hold, -- nil: none (the default, 0)
    latch_ttl_ms = DEFAULT.latch_ttl,
    fair_wait_ms = DEFAULT.fair_wait,
    handover_grace_ms = o.handover_grace or DEFAULT.handover_grace,
    failover_grace_ms = o.failover_grace or DEFAULT.failover_grace, -- failover.lua
    grants_paused_until = 0, -- failover.lua: no new hold before (ms)
    slots_paused_until = {}, slots_paused_latest = 0, -- failover.lua: the same per slot
    drift_ppm = o.drift_factor or DEFAULT.drift_factor, -- the validity margin (validity.lua)
    client_name = o.client_name, -- nil: "<host>:<pid>"
    keepalive_ms = 60000,
    pool_size = 256,
    shut = false,
    holds = {},
    latches = {},
    takebacks = {}, -- hold key -> a hold being taken back (takeback.lua)
    pipe = false, -- the worker's shared connection (pipe.lua)
    wd = {},
    counters = { renew_rounds = 0, renew_round_trips = 0, renew_calls = 0, renewed_holds = 0,
      last_round_holds = 0, master_changes = 0 },
  }, Client)
  self.pool = not ep.sentinel and conn.pool_name(ep) or nil
  self.connect_opts = { pool = self.pool }
  -- where the master is, for a deployment that moves it (nil: ep itself); see conn.open
  self.resolver = ep.sentinel and require("redlease.resty.sentinel").new(self, o) or nil
  if ep.cluster then self.cluster = cluster.new(self, ep, o) end
  self.sub = Sub.of(self)
  self.handovers = Handovers.new()
  return self
end

-- The worker's identity, made on first use in this process (a client made in init_by_lua is
-- copied into every worker: each gets its own UUID and forgets what the master knew). p: the
-- phase. Only the master forks, and the master runs Lua only in the init phase: an identity
-- made in any other phase was made in this process, and is not looked at again.
local function identity(self, p)
  if self.in_worker then return end
  local pid = ngx.worker.pid()
  if self.pid ~= pid then
    self.pid = pid
    self.uuid = owner.uuid()
    -- CLIENT SETNAME on each new connection (conn.lua), as the core's conn_name.c names them;
    -- pooled per identity, so that no connection carries another client's name.
    local label = self.client_name or owner.host() .. ":" .. pid
    self.conn_name = "redlease:" .. self.uuid .. ":" .. label
    self.connect_opts = { pool = (self.pool or "") .. ":" .. self.uuid }
    if self.resolver then self.resolver = self.resolver:fresh() end
    self.latch_id_prefix = owner.random_hex(8)
    self.latch_serial = 0
    self.holds = {}
    self.latches = {}
    self.takebacks = {}
    self.takeback_running = false
    self.pipe = false -- (pipe.lua: the worker's shared connection, made on first call)
    self.wd = {}
    self.sub = Sub.of(self)
    self.handovers = Handovers.new()
  end
  self.in_worker = (p or ngx.get_phase()) ~= "init"
end

-- The phase (a true value: owner.run takes it), or nil and why the client cannot talk to Redis
-- here and now.
function Client:ready(what)
  if self.shut then return nil, "closed: the client is closed" end
  local p, err = phase.check(what)
  if not p then return nil, err end
  identity(self, p)
  return p
end

-- Which master this worker talks to now (a count of the masters it followed; 0: one server);
-- client.answered_by: which one answered the last script call (runner.lua).
function Client:master_epoch()
  return self.resolver and self.resolver:epoch() or 0
end

function Client:id()
  identity(self)
  return self.uuid
end

function Client:owner_of(run)
  identity(self, run.phase)
  local uuid = self.uuid
  if run.owner_uuid ~= uuid then -- the run's owner string, made once (for the last client asking)
    run.owner, run.owner_uuid = uuid .. ":" .. run.id, uuid
  end
  return run.owner
end

-- A fresh unlock request id (32 hex): random per worker, then a counter.
function Client:request_id()
  self.latch_serial = self.latch_serial + 1
  return ("%s%016x"):format(self.latch_id_prefix, self.latch_serial)
end

local function flush_latches(premature, self)
  self.latch_timer = false
  local del = self:take_latches()
  if not del or premature and self.shut then return end
  if self.cluster then return self.cluster:delete(del) end
  -- (the answer, a count, tells nothing; failed, the latches expire by their TTL)
  local p = pipe.of(self)
  if p then return p:exchange(encode({}, del), 1) end
  local c = conn.open(self)
  if not c then return end
  local ok = c:raw_exchange(encode({}, del), 1)
  if ok then c:done() end
end

-- An answered release's latch: deleted with this worker's next command, or by a timer.
function Client:delete_latch(key)
  local l = self.latches
  l[#l + 1] = key
  if not self.latch_timer then
    self.latch_timer = ngx.timer.at(LATCH_FLUSH_S, flush_latches, self)
      or ngx.timer.at(0, flush_latches, self) -- exiting: only zero delays are allowed
  end
end

-- {"DEL", keys...} of the pending latches (and forgets them), or nil.
function Client:take_latches()
  local l = self.latches
  if #l == 0 then return nil end
  self.latches = new_tab(2, 0) -- (room for "DEL" and one latch, the most often)
  table.insert(l, 1, "DEL")
  return l
end

function Client:give_back_latches(del)
  for i = 2, #del do self.latches[#self.latches + 1] = del[i] end
end

function Client:forget_hold(hold)
  if self.holds[hold.key] == hold then self.holds[hold.key] = nil end
  hold.watched = false
  hold.count = math.max(hold.count, 0)
end

-- A hold lost while held: no longer renewed, said in the error log.
function Client.hold_lost(_, hold, reason)
  if hold.lost then return end
  hold.lost = reason
  hold.watched = false
  ngx.log(ngx.ERR, ('redlease: %s "%s" lost while held: %s'):format(hold.what or "lock",
    hold.shown, reason))
end

-- The watchdog found a hold whose run ended: release every count of it (and any Redis counts
-- of its owner the run did not know of).
function Client:release_leftover(hold)
  if hold.leftover then return hold.leftover(hold) end -- a semaphore's (semaphore.lua)
  local lease = hold.watchdog and self.watchdog_ms or hold.lease_ms
  local ok, err = calls.release_fully(hold.lock, hold.field, lease)
  if not ok then return nil, err end
  return true
end

-- Locks (same API as the C rock's redlease.lock).
function Client:lock(name) return Lock.new(self, args.name(name), "lock") end
function Client:fenced_lock(name) return Lock.new(self, args.name(name), "fenced") end
function Client:fair_lock(name) return Lock.new(self, args.name(name), "fair") end
function Client:rw_lock(name)
  args.name(name)
  return { name = name, read = Lock.new(self, name, "read"), write = Lock.new(self, name, "write") }
end

-- Fencing checked by Redis-stored data (as the C rock's client:fenced_set): SET key to value
-- unless a newer token wrote it -> true, fence before | false, fence (stale) | nil, err.
function Client:fenced_set(key, value, token)
  args.name(key, "fenced_set")
  if type(value) ~= "string" then
    error("bad argument #2 to 'fenced_set' (string expected, got " .. type(value) .. ")", 2)
  end
  if type(token) ~= "number" or token < 1 or token > 2 ^ 53 or token % 1 ~= 0 then
    error("bad argument #3 to 'fenced_set' (a fencing token expected)", 2)
  end
  local ok, err = self:ready("fenced_set")
  if not ok then return nil, err end
  return calls.fenced_set(self, key, value, ("%d"):format(token))
end

-- Redisson's RSemaphore and RPermitExpirableSemaphore on `name` (permits owned per run).
function Client:semaphore(name)
  return Semaphore.Semaphore.new(self, args.name(name, "semaphore"))
end
function Client:permit_expirable_semaphore(name)
  return Semaphore.PermitSemaphore.new(self, args.name(name, "permit_expirable_semaphore"))
end

-- The locks (any kinds, any clients) taken as one by the calling run (multilock.lua).
function Client.multi_lock(_, ...) return MultiLock.new("multi_lock", false, ...) end

-- A Redisson RCountDownLatch on `name`.
function Client:count_down_latch(name)
  return Latch.new(self, args.name(name, "count_down_latch"))
end

-- Stops renewal and the subscriber in this worker. Holds are not released: they expire by
-- their lease.
function Client:close()
  self.shut = true
  if self.pipe then self.pipe.wake:post(1) end
  if self.sub then self.sub.wake:post(1) end
  if self.resolver then self.resolver:stop() end
end

function Client:closed() return self.shut end

-- Renewal counters of this worker (as the C core's rl_stats) and the subscriptions.
function Client:stats()
  local s = {}
  for k, v in pairs(self.counters) do s[k] = v end
  local n = 0
  for _, h in pairs(self.holds) do if h.watched then n = n + 1 end end
  s.watched = n
  s.subscriptions = self.sub.subscriptions
  s.watchdog_running = self.wd.started == true
  s.shared_connection = self.pipe and self.pipe.running or false -- (pipe.lua)
  return s
end

function Client:__tostring()
  return self.shut and "redlease.client (closed)" or "redlease.client " .. tostring(self.uuid)
end

-- The object connect() returns: the documented API and nothing else. The state and the helpers
-- the backend's modules share (holds, latches, forget_hold, ...) stay on the internal client,
-- which only Client.of reaches.
local PUBLIC = { "lock", "fenced_lock", "fair_lock", "rw_lock", "count_down_latch",
  "semaphore", "permit_expirable_semaphore", "multi_lock", "fenced_set", "id", "stats", "close",
  "closed" }
local internal = setmetatable({}, { __mode = "k" }) -- public object -> internal client
local Public = {}
for _, name in ipairs(PUBLIC) do
  Public[name] = function(self, ...)
    local c = internal[self]
    if not c then
      error(("bad argument 'self' to '%s' (a redlease client expected: client:%s(...))")
        :format(name, name), 2)
    end
    return c[name](c, ...) -- a tail call: argument errors point at the caller
  end
end
local PUBLIC_MT = { __index = Public, __metatable = "redlease.client",
  __newindex = function() error("a redlease client has no fields to set", 2) end,
  __tostring = function(self) return tostring(internal[self]) end }

function Client.public(c)
  local p = setmetatable({}, PUBLIC_MT)
  internal[p] = c
  c.public = p -- (lock.client)
  return p
end

-- The internal client of a public one (the backend's tests reach Redis through it).
function Client.of(p)
  return internal[p]
end

return Client
