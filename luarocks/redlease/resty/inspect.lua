-- redlease.inspect for the backend: what a key holds, read in Redisson's layouts and decoded as
-- the core's rl_inspect does (csrc/core/inspect.c) and the rock shows it (csrc/lua/ops.c): the
-- kind, every owner field as client id + context with its count and lease, the fair queue with
-- each waiter's time left, a read/write lock's readers, the last fencing token, a counter's
-- value and the subscribers of the kind's channel. Read-only: two round trips (three for a
-- read/write lock's readers).
local conn = require "redlease.resty.conn"
local keys = require "redlease.resty.keys"
local resp = require "redlease.resty.resp"

local inspect = {}
local MAX_FIELDS, MAX_QUEUE, MAX_READ_HOLDS = 1000, 1000, 100
local prefixed, is_error = keys.prefixed, resp.is_error

-- Plain commands pipelined on one connection (read-only: tried twice) -> replies | nil, err
local function batch(client, commands)
  if client.cluster then return client.cluster:each(commands) end
  local parts = {}
  for _, args in ipairs(commands) do resp.encode(parts, args) end
  local err
  for _ = 1, 2 do
    local c
    c, err = conn.open(client)
    if not c then return nil, err end
    local replies
    replies, err = c:exchange(parts, #commands)
    if replies then
      c:done()
      return replies
    end
  end
  return nil, err
end

-- A decimal integer reply (an integer, or a string of digits), else nil.
local function as_int(r)
  if type(r) == "number" then return r end
  if type(r) == "string" and #r > 0 and #r <= 20 and r:match("^%-?%d+$") then return tonumber(r) end
  return nil
end

local function uuid_shaped(s)
  return s:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x")
    ~= nil and (#s == 36 or s:sub(37, 37) == ":")
end

-- "<uuid>:<context>[:write]" -> client id, context, write
local function decode_owner(field)
  local write = #field > 6 and field:sub(-6) == ":write"
  local body = write and field:sub(1, -7) or field
  if uuid_shaped(body) and #body > 37 then return body:sub(1, 36), body:sub(38), write end
  return "", body, write
end

-- Seconds: false when there is no key, math.huge without expiry.
local function seconds(ms)
  if ms == -2 then return false end
  if ms == -1 then return math.huge end
  return ms / 1000
end

-- Whether this worker's client holds (name, run) under the owner's client id.
local function known_here(client, name, o)
  if o.client_id ~= client.uuid then return false end
  for _, kind in ipairs { "lock", "fenced", "fair", "read", "write" } do
    local h = client.holds[kind .. ":" .. name .. "\0" .. o.context]
    if h and h.count > 0 and not h.lost then return true end
  end
  return false
end

local function read_owners(found, all, lease_ms)
  local shaped = true
  for i = 1, #all - 1, 2 do
    local f, v = all[i], all[i + 1]
    if type(f) ~= "string" or type(v) ~= "string" then
      shaped = false
    elseif f == "mode" then
      found.mode = v
      shaped = shaped and (v == "read" or v == "write")
    else
      local client_id, context, write = decode_owner(f)
      local count = as_int(v)
      found.owners[#found.owners + 1] = { field = f, client_id = client_id, context = context,
        count = count or 0, lease_ms = lease_ms, write = write }
      shaped = shaped and count ~= nil and count > 0 and f:find(":", 1, true) ~= nil
    end
  end
  return shaped
end

-- Read/write: each reader's lease is its longest hold key's.
local function read_readers(client, found, name)
  local base = name:find("{", 1, true) and name or "{" .. name .. "}"
  local commands, first = {}, {}
  for i, o in ipairs(found.owners) do
    first[i] = #commands + 1
    for k = 1, o.write and 0 or math.min(o.count, MAX_READ_HOLDS) do
      commands[#commands + 1] = { "PTTL", base .. ":" .. o.field .. ":rwlock_timeout:" .. k }
    end
  end
  first[#found.owners + 1] = #commands + 1
  if #commands == 0 then return true end
  local replies, err = batch(client, commands)
  if not replies then return nil, err end
  for i, o in ipairs(found.owners) do
    if not o.write then
      local longest = -2
      for j = first[i], first[i + 1] - 1 do
        local t = as_int(replies[j])
        if t and t > longest then longest = t end
      end
      o.lease_ms = longest
    end
  end
  return true
end

-- -> the rock's inspection table | nil, err (client: the internal client)
function inspect.key(client, name)
  local n = { token = prefixed("redisson_lock_token", name),
    queue = prefixed("redisson_lock_queue", name),
    deadlines = prefixed("redisson_lock_timeout", name),
    lock_channel = prefixed("redisson_lock__channel", name),
    rw_channel = prefixed("redisson_rwlock", name), sem_channel = prefixed("redisson_sc", name),
    latch_channel = "redisson_countdownlatch__channel__{" .. name .. "}" }
  local r, err = batch(client, { { "TYPE", name }, { "PTTL", name }, { "HLEN", name },
    { "GET", n.token }, { "LRANGE", n.queue, "0", tostring(MAX_QUEUE - 1) }, { "GET", name } })
  if not r then return nil, err end
  local e = is_error(r[1]) or is_error(r[2])
  if e then return nil, "server: inspect refused: " .. e end
  local found = { type = type(r[1]) == "string" and r[1] or "", lease_ms = as_int(r[2]) or -2,
    last_token = as_int(r[4]) or 0, count = 0, subscribers = 0, owners = {}, queue = {} }
  local is_hash = found.type == "hash"
  local queue = type(r[5]) == "table" and r[5] or {}
  local kind
  if is_hash then
    kind = (as_int(r[3]) or 0) > MAX_FIELDS and "other" or #queue > 0 and "fair"
      or found.last_token ~= 0 and "fenced" or "reentrant"
  elseif found.type == "string" then
    found.count = as_int(r[6]) or 0
    kind = as_int(r[6]) and "counter" or "other"
  elseif found.type == "none" then
    kind = #queue > 0 and "fair" or "none"
  else
    kind = "other"
  end
  -- phase 2: the fields, the waiters' deadlines, the subscribers
  local commands, hgetall = {}, nil
  if kind ~= "other" and is_hash then
    commands[1] = { "HGETALL", name }
    hgetall = 1
  end
  local scores = #commands + 1
  if kind == "fair" then
    for _, w in ipairs(queue) do commands[#commands + 1] = { "ZSCORE", n.deadlines, w } end
  end
  local channels = {}
  if kind == "counter" then
    channels = { n.sem_channel, n.latch_channel }
  elseif kind == "reentrant" or kind == "fenced" then
    channels = { n.lock_channel }
  elseif kind == "fair" then
    for _, w in ipairs(queue) do channels[#channels + 1] = n.lock_channel .. ":" .. w end
  end
  local ask_rw = is_hash and kind ~= "other"
  if ask_rw then channels[#channels + 1] = n.rw_channel end
  local numsub_at = #commands + 1
  for _, ch in ipairs(channels) do commands[#commands + 1] = { "PUBSUB", "NUMSUB", ch } end
  local r2 = {}
  if #commands > 0 then
    r2, err = batch(client, commands)
    if not r2 then return nil, err end
  end
  local rw_subscribers = 0
  for i = 1, #channels do
    local v = r2[numsub_at + i - 1]
    local k = type(v) == "table" and #v == 2 and as_int(v[2]) or 0
    if ask_rw and i == #channels then
      rw_subscribers = k
    else
      found.subscribers = found.subscribers + k
    end
  end
  if hgetall and type(r2[hgetall]) == "table" then
    if not read_owners(found, r2[hgetall], found.lease_ms) then kind = "other" end
    if found.mode and kind ~= "other" then
      kind = "read_write"
      found.subscribers = rw_subscribers
    end
  end
  ngx.update_time()
  local now = ngx.now() * 1000
  if kind == "fair" then
    for i, w in ipairs(queue) do
      local client_id, context = decode_owner(w)
      local s = tonumber(r2[scores + i - 1])
      found.queue[i] = { owner = w, client_id = client_id, context = context,
        timeout = math.max((s and math.floor(s) or now) - now, 0) / 1000 }
    end
  end
  if kind == "read_write" then
    local ok, rerr = read_readers(client, found, name)
    if not ok then return nil, rerr end
  end
  found.kind = kind
  found.lease = seconds(found.lease_ms)
  found.lease_ms = nil
  for _, o in ipairs(found.owners) do
    o["local"] = known_here(client, name, o)
    o.lease = seconds(o.lease_ms)
    o.lease_ms = nil
  end
  return found
end

return inspect
