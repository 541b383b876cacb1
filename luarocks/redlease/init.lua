-- redlease: Redisson-compatible distributed locks on Redis. The lock logic lives in the C core
-- (redlease.core); this module gives it Lua's habits. Inside nginx (lua-nginx-module) it is the
-- OpenResty backend instead (redlease.resty): the C core's blocking calls would stall a worker.
local ngx = rawget(_G, "ngx")
if type(ngx) == "table" and type(ngx.config) == "table" and ngx.config.subsystem then
  return require "redlease.resty"
end

local core = require "redlease.core"
local args = require "redlease.args"
local events = require "redlease.events"
local methods = require "redlease.methods"
local Lock = require "redlease.lock"
local Latch = require "redlease.latch"
local MultiLock = require "redlease.multilock"
local semaphore = require "redlease.semaphore"

local redlease = {}
-- The rock's version.
redlease._VERSION = core.version
-- true when this build has TLS (rediss://); without it, rediss:// answers "unsupported: ...".
redlease.tls_supported = core.tls_supported

-- The logger every record of the rock goes to: a function(level, message), level "debug",
-- "info", "warning" or "error"; false: none. The default writes warnings and errors to
-- io.stderr (redlease/events.lua says why).
redlease.logger = events.stderr_logger
events.module = redlease

-- A client (redlease.connect): its connections, its watchdog thread, and the locks,
-- semaphores and latches made from it.
local Client = {}
Client.__index = Client
local clients_made = 0

-- The hooks connect takes beside the core's options.
local HOOKS = { on_lost = true, on_state = true }

-- true, opts without the hooks, and the hooks; or false, the name of a hook that is not a
-- function and what is wrong with it.
local function split_hooks(opts)
  if type(opts) ~= "table" then return true, opts, {} end
  local rest, hooks = {}, {}
  for k, v in pairs(opts) do
    if HOOKS[k] then
      local t = type(v)
      local mt = (t == "table" or t == "userdata") and getmetatable(v)
      if t ~= "function" and not (type(mt) == "table" and mt.__call) then
        return false, k, "function expected, got " .. t
      end
      hooks[k] = v
    else
      rest[k] = v
    end
  end
  return true, rest, hooks
end

local function refused(name, why)
  return nil, ("argument: bad argument '%s' to 'connect' (%s)"):format(name, why)
end

-- connect(url, {watchdog_timeout=, connect_timeout=, command_timeout=, max_hold=,
-- sync_timeout= in seconds; sync_replicas= a count; tls_ca_file=, tls_ca_dir=, tls_cert_file=,
-- tls_key_file=, tls_server_name= strings and tls_insecure_skip_verify= a boolean, for rediss://;
-- handover_grace= and failover_grace= in seconds, 0: off, docs/semantics.md; drift_factor= a
-- fraction of the lease kept as the validity margin, default 0.01;
-- on_lost = function(name, reason), on_state = function(name, state, why), called as
-- redlease/events.lua says; client_name= how
-- its connections name themselves to Redis, shown beside its holds by inspect and owner(),
-- default "<host>:<pid>")
-- -> client | nil, err. Every failure is an answer, never raised: a URL or option that cannot be
-- used answers "argument: bad argument '<name>' to 'connect' (...)" (they often come from
-- configuration). Connections open on first use.
function redlease.connect(url, opts)
  local fine, rest, hooks = split_hooks(opts)
  if not fine then return refused(rest, hooks) end
  local checked, bad, refusal = args.connect(url, rest, core.options)
  if not checked then return refused(bad, refusal) end
  local c, err = core.connect(url, checked)
  if not c then
    local why = err:match("^argument: (.*)")
    if why then -- the URL, or the option the core names first
      local name = args.refused_option(why, core.options)
        or (why:find("tls_*", 1, true) and "options")
      return refused(name or "url", why)
    end
    return nil, err
  end
  clients_made = clients_made + 1
  return setmetatable({ _core = c, _serial = clients_made, _on_lost = hooks.on_lost,
    _on_state = hooks.on_state }, Client)
end

local function make(client, name, kind)
  args.name(name)
  return Lock.new(client, client._core:lock(name, kind), name,
    client._serial .. ":" .. kind .. ":" .. name, kind)
end

-- A lock (Redisson RLock) on `name` (any non-empty string, bytes as they are).
function Client:lock(name) return make(self, name, "lock") end

-- A Redisson RFencedLock: as lock, and every acquire (reentrant ones too) takes a strictly
-- increasing fencing token: guard.token, lock:token().
function Client:fenced_lock(name) return make(self, name, "fenced") end

-- A Redisson RFairLock: as lock, and waiters acquire in arrival order.
function Client:fair_lock(name) return make(self, name, "fair") end

-- A Redisson RReadWriteLock: rw.read (shared) and rw.write (exclusive) are locks with the full
-- lock API. The writer may also read (downgrade); a reader never upgrades.
function Client:rw_lock(name)
  return { name = name, read = make(self, name, "read"), write = make(self, name, "write") }
end

-- A Redisson RSemaphore on `name`: permits shared by every client (Java's too); each belongs to
-- the client that took it.
function Client:semaphore(name)
  args.name(name, "semaphore")
  return semaphore.Semaphore.new(self, core.semaphore(self._core, name), name)
end

-- A Redisson RPermitExpirableSemaphore on `name`: permits with ids and leases.
function Client:permit_expirable_semaphore(name)
  args.name(name, "permit_expirable_semaphore")
  return semaphore.PermitSemaphore.new(self, core.permit_semaphore(self._core, name), name)
end

-- A Redisson RCountDownLatch on `name`.
function Client:count_down_latch(name)
  args.name(name, "count_down_latch")
  return Latch.new(self, core.countdown(self._core, name), name)
end

local function cores(fname, locks)
  local out = {}
  for i, lock in ipairs(locks) do
    if getmetatable(lock) ~= Lock then
      args.misuse(("bad argument #%d to '%s' (lock expected, got %s)"):format(i, fname,
        type(lock)))
    end
    out[i] = lock._core
  end
  return out
end

-- The locks (any kinds, any clients) taken as one, all or none (RedissonMultiLock's rules).
function Client.multi_lock(_, ...)
  local locks = { ... }
  return MultiLock.new(core.multilock(cores("multi_lock", locks), false), locks, false)
end

-- A RedLock over locks of independent Redis servers (one client each): held once a majority is
-- taken within the lease's validity; released on every server. See docs/semantics.md first.
function redlease.red_lock(...)
  local locks = { ... }
  return MultiLock.new(core.multilock(cores("red_lock", locks), true), locks, true)
end

-- What the key `name` holds, decoded (the facts `redlease inspect` shows): a table with kind
-- ("none", "reentrant", "fenced", "fair", "read_write", "counter", "other"), type, mode, lease
-- (seconds; false: no key), count, last_token, subscribers, owners and queue; or nil, err.
function redlease.inspect(client, name)
  if getmetatable(client) ~= Client then
    args.misuse("bad argument #1 to 'inspect' (client expected, got " .. type(client) .. ")")
  end
  args.name(name, "inspect")
  events.dispatch(client)
  return client._core:inspect(name)
end

-- This client's counters (kept in the core, as Python's client.stats()): acquisitions, waits,
-- wait_seconds_total, wait_seconds_max, lost_total, lost (by reason), holds, waiters,
-- renew_rounds, renew_failed_rounds, ...
function Client:stats() return self._core:stats() end

-- Fencing checked by Redis-stored data (docs/semantics.md): SET key to value unless a newer
-- fencing token wrote it. The greatest token is kept beside it in "redlease_fence:{key}".
-- Returns true, the fence before (0: none); false, the fence when the token is stale (refused);
-- nil, err on failure.
function Client:fenced_set(key, value, token)
  args.name(key, "fenced_set")
  if type(value) ~= "string" then
    error("bad argument #2 to 'fenced_set' (string expected, got " .. type(value) .. ")", 2)
  end
  return self._core:fenced_set(key, value, token)
end

-- Delivers the events queued for this client now (on_lost, on_state, the logger): how many.
-- Every call into the client and its objects does it too; a loop that makes none for a while
-- calls this to hear of a loss sooner (redlease/events.lua).
function Client:dispatch() return events.dispatch(self) end

-- Stops renewal and closes the connections. Holds are not released: they expire by their lease.
-- The events queued until then are delivered first.
function Client:close()
  events.dispatch(self)
  self._core:close()
end
-- Whether close() was called.
function Client:closed() return self._core:closed() end
-- The client's UUID, the first part of every owner it writes.
function Client:id() return self._core:id() end

function Client:__tostring() return tostring(self._core) end

methods.wrap(Client, "client", function(self) return self end, { dispatch = true })

return redlease
