-- The script calls of each lock kind: which script, its KEYS and ARGV, and what the answer means
-- (the same calls as csrc/core/lock_calls.c; csrc/core/scripts.h documents each script).
local keys = require "redlease.resty.keys"
local resp = require "redlease.resty.resp"
local runner = require "redlease.resty.runner"

local calls = {}
local null = resp.null
local REENTERED = "REENTERED" -- the acquire scripts' status answer to an owner that held it
local PUBLISH, ONE_MAY_GO, ALL_MAY_GO = "publish", "0", "1"
local RELEASE_FULLY_MAX = 100 -- as the core's RL_RELEASE_FULLY_MAX

local function epoch_ms()
  return math.floor(ngx.now() * 1000)
end

-- -> reply | nil, err, unanswered (sent, no answer: Redis may have run it)
local function one(client, call, idempotent)
  local replies, err, _, unanswered = runner.run(client, { call }, idempotent)
  if not replies then return nil, err, unanswered end
  return replies[1]
end

-- As one(), for a call already encoded (runner.run_encoded).
local function one_encoded(client, bytes, idempotent)
  local replies, err, _, unanswered = runner.run_encoded(client, bytes, 1, idempotent)
  if not replies then return nil, err, unanswered end
  return replies[1]
end

-- The plain lock's acquire and release on one server (no cluster) go out as bytes joined from
-- pieces made once per lock name and lease: the same bytes runner.encode_call makes of their
-- call tables, without the tables, the scratch list and a string per number argument. What
-- changes per call (the owner, the latch) is put in between.
local ARRAY, BULK, HEAD = resp.ARRAY, resp.BULK, runner.head

local function bulk(a)
  a = tostring(a)
  return BULK[#a] .. a .. "\r\n"
end

-- k: the lock's keys (made once per name, lock.lua); -> {acquire prefix, release prefix,
-- release middle, release tail} for this lease (ms) and latch TTL.
local LEASES_KEPT = 8 -- leases kept per name: past that many it starts afresh

local function plain_pieces(k, lease, ttl)
  local by_lease = k.encoded
  local p = by_lease and by_lease[lease]
  if p and by_lease.ttl == ttl then return p end
  if not by_lease or by_lease.ttl ~= ttl or by_lease.n >= LEASES_KEPT then
    by_lease = { ttl = ttl, n = 0 }
    k.encoded = by_lease
  end
  by_lease.n = by_lease.n + 1
  local fixed = bulk(k.name)
  p = {
    ARRAY[6] .. HEAD.acquire .. bulk(1) .. fixed .. bulk(lease), -- then the owner
    ARRAY[11] .. HEAD.release .. bulk(3) .. fixed .. bulk(k.channel), -- then the latch
    bulk(ONE_MAY_GO) .. bulk(lease), -- then the field
    bulk(ttl) .. bulk(PUBLISH),
  }
  by_lease[lease] = p
  return p
end

-- One acquire try for `owner`. -> true, token, reentered | false, wait hint ms (-1: unknown) |
-- nil, err, unanswered (sent, and its answer lost: Redis may have granted it). reentered: Redis
-- answered that this owner already held the lock (REENTERED, or a fenced {-1, token, 1}), else
-- it was granted afresh. queue (fair): join the wait queue for `window` ms.
function calls.acquire(l, owner, lease, queue, window)
  local k, kind, client = l._keys, l.kind, l._core
  local call, reply, err, unanswered
  if kind == "lock" and not client.cluster then -- {"acquire", 1, k.name, lease, owner}
    reply, err, unanswered = one_encoded(client, plain_pieces(k, lease, client.latch_ttl_ms)[1]
      .. BULK[#owner] .. owner .. "\r\n", false)
    if reply == nil then return nil, err, unanswered end
  elseif kind == "fenced" then
    call = { "fenced_acquire", 2, k.name, k.token, lease, owner }
  elseif kind == "fair" then
    call = { "fair_acquire", 3, k.name, k.queue, k.deadlines, lease, owner, window, epoch_ms(),
      queue and "1" or "0" }
  elseif kind == "read" then
    call = { "read_acquire", 2, k.name, keys.read_holds(kind, k, owner), lease, owner,
      owner .. ":write" }
  elseif kind == "write" then
    call = { "write_acquire", 1, k.name, lease, keys.field(kind, owner) }
  else
    call = { "acquire", 1, k.name, lease, owner }
  end
  if call then
    reply, err, unanswered = one(client, call, false)
    if reply == nil then return nil, err, unanswered end
  end
  if reply == null then return true, nil, false end
  if reply == REENTERED then return true, nil, true end
  if type(reply) == "number" then
    if kind == "fair" and not queue then return false, -1 end -- a one-try answers 1, not a time
    return false, reply
  end
  if kind == "fenced" and type(reply) == "table" and #reply >= 2 then
    -- {-1, token, 0|1}: acquired afresh or re-entered; {PTTL, -1} refused (a holder without
    -- TTL reads {-1, -1})
    if reply[1] == -1 and type(reply[2]) == "number" and reply[2] >= 1 then
      return true, reply[2], reply[3] == 1
    end
    return false, tonumber(reply[1]) or -1
  end
  return nil, "server: unexpected answer to acquire"
end

-- Takes back what an acquire just granted `owner` (one release under a fresh request id; best
-- effort: otherwise it expires by its lease).
function calls.undo_acquire(l, owner, lease)
  local client = l._core
  local reply, latch = calls.release(l, keys.field(l.kind, owner), lease, client:request_id())
  if reply ~= nil then client:delete_latch(latch) end
end

-- Fair locks: leave the wait queue (best effort).
function calls.leave_queue(l, owner, window)
  local k = l._keys
  one(l._core, { "fair_cancel", 4, k.queue, k.deadlines, k.name, k.channel, owner, window,
    ONE_MAY_GO, PUBLISH }, true)
end

-- One release of `field`'s hold under the latch of request_id. -> reply (null = not held,
-- 0 = still held, 1 = released), latch key | nil, err.
function calls.release(l, field, lease, request_id)
  local k, kind, client = l._keys, l.kind, l._core
  local latch = k.latch_prefix .. request_id
  local ttl = client.latch_ttl_ms
  local call, reply, err
  if kind == "lock" and not client.cluster then
    -- {"release", 3, k.name, k.channel, latch, ONE_MAY_GO, lease, field, ttl, PUBLISH}
    -- (two pieces, each ending with bytes that change from call to call: LuaJIT hashes a
    -- string of 128 bytes or more by samples of it, and release commands as one string, alike
    -- but for an owner and a latch in the middle, would share a hash and make each new one be
    -- compared with the last ones; nginx sends a list of two pieces as cheaply)
    local p = plain_pieces(k, lease, ttl)
    reply, err = one_encoded(client, { p[2] .. BULK[#latch] .. latch .. "\r\n",
      p[3] .. BULK[#field] .. field .. "\r\n" .. p[4] }, true)
    if reply == nil then return nil, err end
    return reply, latch
  elseif kind == "fair" then
    call = { "fair_release", 5, k.name, k.queue, k.deadlines, k.channel, latch, ONE_MAY_GO, lease,
      field, epoch_ms(), PUBLISH, ttl }
  elseif kind == "read" then
    call = { "read_release", 5, k.name, k.channel, keys.read_holds(kind, k, field), k.base, latch,
      ONE_MAY_GO, field, PUBLISH, ttl }
  elseif kind == "write" then
    call = { "write_release", 3, k.name, k.channel, latch, ALL_MAY_GO, lease, field, PUBLISH, ttl }
  else
    call = { "release", 3, k.name, k.channel, latch, ONE_MAY_GO, lease, field, ttl, PUBLISH }
  end
  reply, err = one(client, call, true)
  if reply == nil then return nil, err end
  return reply, latch
end

-- Removes every count of `field` from Redis: releases until Redis answers "released" or "not
-- held" (at most RELEASE_FULLY_MAX). -> the number of "still held" answers | nil, err, that
-- number.
function calls.release_fully(l, field, lease)
  local client, still_held = l._core, 0
  for _ = 1, RELEASE_FULLY_MAX do
    local reply, latch = calls.release(l, field, lease, client:request_id())
    if reply == nil then return nil, latch, still_held end
    client:delete_latch(latch)
    if reply ~= 0 then return still_held end
    still_held = still_held + 1
  end
  return nil, ("server: still held after %d releases"):format(RELEASE_FULLY_MAX), still_held
end

-- Force unlock -> deleted (boolean) | nil, err.
function calls.force_unlock(l)
  local k, kind = l._keys, l.kind
  local call
  if kind == "fair" then
    call = { "fair_force_unlock", 4, k.name, k.queue, k.deadlines, k.channel, ONE_MAY_GO, PUBLISH,
      epoch_ms() }
  elseif kind == "read" or kind == "write" then
    call = { "rw_force_unlock", 2, k.name, k.channel, kind, kind == "read" and ONE_MAY_GO
      or ALL_MAY_GO, PUBLISH }
  elseif kind == "fenced" then -- the fence advances too (docs/protocol.md)
    call = { "fenced_force_unlock", 3, k.name, k.channel, k.token, ONE_MAY_GO, PUBLISH }
  else
    call = { "force_unlock", 2, k.name, k.channel, ONE_MAY_GO, PUBLISH }
  end
  local reply, err = one(l._core, call, false)
  if reply == nil then return nil, err end
  return reply == 1
end

-- SET key to value unless a newer fencing token wrote it (the fence is kept beside it) ->
-- true, fence before | false, fence (stale) | nil, err.
function calls.fenced_set(client, key, value, token)
  local reply, err = one(client, { "fenced_set", 2, key, keys.prefixed("redlease_fence", key),
    tostring(token), value }, false)
  if reply == nil then return nil, err end
  return reply[1] == 1, reply[2]
end

-- Renewal calls for a list of holds, at most `per_call` keys each: {renew, n, names...,
-- lease, (field, read-hold prefix or "")...}.
function calls.renew_batch(holds, lease, per_call)
  local out = {}
  for first = 1, #holds, per_call do
    local last = math.min(first + per_call - 1, #holds)
    local n = last - first + 1
    local call = { "renew", n }
    for i = first, last do call[#call + 1] = holds[i].name end
    call[#call + 1] = lease
    for i = first, last do
      local h = holds[i]
      call[#call + 1] = h.field
      call[#call + 1] = h.read_holds or ""
    end
    out[#out + 1] = call
  end
  return out
end

return calls
