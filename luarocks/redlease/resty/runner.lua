-- Runs the lock scripts with EVALSHA. The texts come from scripts.lua, generated from the C core
-- (tools/gen_resty_scripts.c), so the SHA1s are the core's and either side's SCRIPT LOAD serves
-- both. A NOSCRIPT answer (a restarted or flushed server) loads every script in one round trip
-- and runs the calls again: a call answered NOSCRIPT did not run, so that is safe for any script.
local conn = require "redlease.resty.conn"
local pipe = require "redlease.resty.pipe"
local resp = require "redlease.resty.resp"
local texts = require "redlease.resty.scripts"
local url = require "redlease.resty.url"

local runner = {}
local encode, is_error, ARRAY, BULK = resp.encode, resp.is_error, resp.ARRAY, resp.BULK

-- The scripts this backend sends (the lock kinds', the semaphores' and the latch's), for SCRIPT
-- LOAD in the core's order (rl_script_id, generated with the texts).
local USES = { acquire = true, release = true, force_unlock = true, renew = true,
  fenced_acquire = true, fair_acquire = true, fair_cancel = true, fair_release = true,
  fair_force_unlock = true, read_acquire = true, write_acquire = true, read_release = true,
  write_release = true, rw_force_unlock = true, fenced_force_unlock = true, fenced_set = true,
  latch_try_set = true, latch_count_down = true, latch_delete = true,
  semaphore_try_set = true, semaphore_add = true, semaphore_acquire = true,
  semaphore_release = true, semaphore_drain = true, permit_acquire = true, permit_release = true,
  permit_update_lease = true, permit_available = true, permit_add = true }
local ORDER = {}
for _, name in ipairs(texts._ORDER) do
  if USES[name] then ORDER[#ORDER + 1] = name end
end

local sha, head = {}, {}
for _, name in ipairs(ORDER) do
  sha[name] = (ngx.sha1_bin(texts[name]):gsub(".",
    function(c) return ("%02x"):format(c:byte()) end))
  head[name] = "$7\r\nEVALSHA\r\n$40\r\n" .. sha[name] .. "\r\n" -- the fixed start of a call
end
runner.sha = sha
runner.order = ORDER

local function load_all(c)
  local parts = {}
  for _, name in ipairs(ORDER) do encode(parts, { "SCRIPT", "LOAD", texts[name] }) end
  local replies, err = c:exchange(parts, #ORDER)
  if not replies then return nil, err end
  for i = 1, #ORDER do
    local e = is_error(replies[i])
    if e then return nil, "server: SCRIPT LOAD refused: " .. e end
  end
  return true
end

local function refused_readonly(replies, n)
  for i = 1, n do
    local e = is_error(replies[i])
    if e and e:sub(1, 8) == "READONLY" then return true end
  end
  return false
end

local function is_noscript(v)
  local e = is_error(v)
  return e and e:sub(1, 8) == "NOSCRIPT"
end
runner.load_all, runner.is_noscript = load_all, is_noscript

-- Appends one call ({name, nkeys, keys and args...}) as EVALSHA to `parts`.
local function encode_call(parts, call)
  local n, k = #call, #parts
  parts[k + 1] = ARRAY[n + 1]
  parts[k + 2] = head[call[1]] or error("no script " .. tostring(call[1]))
  k = k + 2
  for j = 2, n do
    local a = tostring(call[j])
    parts[k + 1] = BULK[#a]
    parts[k + 2] = a
    parts[k + 3] = "\r\n"
    k = k + 3
  end
  return parts
end
runner.encode_call = encode_call
runner.head = head -- name -> the fixed start of its EVALSHA (after the array header)
local scratch, concat, clear = {}, table.concat, require "table.clear"

-- The answers of n calls -> replies, nil, trips | nil, err, trips when a script refused.
local function refused(e, trips)
  local auth = e:sub(1, 6) == "NOAUTH" or e:sub(1, 9) == "WRONGPASS"
  return nil, (auth and "connection" or "server") .. ": the lock script refused: " .. e, trips
end

local function checked(replies, n, trips)
  if n == 1 then -- (no loop for one call: a loop stops the JIT from compiling the call whole)
    local e = is_error(replies[1])
    if e then return refused(e, trips) end
    return replies, nil, trips
  end
  for i = 1, n do
    local e = is_error(replies[i])
    if e then return refused(e, trips) end
  end
  return replies, nil, trips
end

-- calls: a list of {name, nkeys, keys and args...} (name as in ORDER). Runs them pipelined on
-- one connection of client `client`. -> replies | nil, err; and the round trips it took; and,
-- with nil, whether the calls were sent and not answered (Redis may have run them).
-- `idempotent`: a call that failed on the network is tried once more on a fresh connection.
-- `timeout_ms`: the whole run ends within that long (else the client's timeouts, per try).
local run_encoded

function runner.run(client, calls, idempotent, timeout_ms)
  if client.cluster then -- each call at the master of its slot (cluster.lua)
    local replies, err, trips, unanswered = client.cluster:run(calls, idempotent, timeout_ms)
    if not replies then return nil, err, trips, unanswered end
    return checked(replies, #calls, trips)
  end
  -- encoded into a scratch list and joined at once (no yield in between: the list is shared;
  -- emptied first too, in case an error left pieces there)
  clear(scratch)
  for i = 1, #calls do encode_call(scratch, calls[i]) end
  local parts = concat(scratch)
  clear(scratch)
  return run_encoded(client, parts, #calls, idempotent, timeout_ms)
end

local function noscript_in(replies, n)
  local missing = n == 1 and is_noscript(replies[1])
  if n > 1 then
    for i = 1, n do missing = missing or is_noscript(replies[i]) end
  end
  return missing
end

-- What a call that ran out of time before it could be sent answers.
local NO_TIME = "connection: no time left for the call"
runner.NO_TIME = NO_TIME

-- The ms left before deadline (ms; nil: none) -> ms | nil (no deadline) | false (none left).
local function ms_left(deadline)
  if not deadline then return nil end
  ngx.update_time()
  local left = deadline - ngx.now() * 1000
  return left >= 1 and left
end

-- run_encoded over the worker's shared connection (pipe.lua): the same tries and answers.
local function run_piped(client, p, parts, n, idempotent, timeout_ms)
  local trips, err, unanswered = 0, NO_TIME, false
  local deadline = timeout_ms and ngx.now() * 1000 + timeout_ms
  for _ = 1, idempotent and 2 or 1 do
    local left = ms_left(deadline)
    if left == false then break end
    local replies, sent
    replies, err, sent = p:exchange(parts, n, left)
    trips = trips + 1
    if replies and noscript_in(replies, n) then
      local ok, lerr = load_all(p)
      if not ok then return nil, lerr, trips + 1 end
      left = ms_left(deadline) -- (the load took some of it)
      if left == false then return nil, NO_TIME, trips + 1 end
      replies, err, sent = p:exchange(parts, n, left)
      trips = trips + 2
    end
    if replies then
      client.answered_by = 0 -- (one server: see below)
      return checked(replies, n, trips)
    end
    unanswered = unanswered or sent
  end
  return nil, err, trips, unanswered
end

-- As runner.run, for calls already encoded as EVALSHA (`parts`: the bytes encode_call makes of
-- n calls, one string or a list of pieces), on a client that is no cluster: a lock's own calls
-- build their bytes from pieces made once per lock (calls.lua).
-- On one server, the calls go over the worker's shared connection.
function run_encoded(client, parts, n, idempotent, timeout_ms)
  local p = pipe.of(client)
  if p then return run_piped(client, p, parts, n, idempotent, timeout_ms) end
  local trips, err, unanswered = 0, NO_TIME, false
  local deadline = timeout_ms and ngx.now() * 1000 + timeout_ms
  local tries, try, readonly = idempotent and 2 or 1, 0, false
  while try < tries do
    try = try + 1
    local left = ms_left(deadline)
    if left == false then break end
    local c
    c, err = conn.open(client, left)
    if not c then return nil, err, trips, unanswered end
    local replies
    replies, err = c:exchange(parts, n)
    if replies and noscript_in(replies, n) then
      local ok, lerr = load_all(c)
      if not ok then
        c.sock:close()
        return nil, lerr, trips + c.exchanges
      end
      replies, err = c:exchange(parts, n)
    end
    trips = trips + c.exchanges
    unanswered = unanswered or not replies
    if replies and client.resolver and refused_readonly(replies, n) then
      -- the master became a replica (a failover): a write it refused did nothing, so the calls
      -- go once more, to the master the sentinels name now
      client.resolver:doubt(c.ep.epoch)
      c.sock:close()
      err = ("connection: %s is no longer the master (READONLY)"):format(url.where(c.ep))
      if readonly then return nil, err, trips end
      readonly, tries, replies = true, tries + 1, nil
    end
    if replies then
      c:done()
      local epoch = c.ep.epoch or 0
      conn.recycle(c)
      local checked_replies, cerr = checked(replies, n, trips)
      if not checked_replies then return nil, cerr, trips end
      -- which master answered (sentinel.lua's epoch; 0: one server), read by the caller with no
      -- yield since: a hold confirmed by one master and found gone by another was lost to a
      -- failover (watchdog.lua). A cluster's calls return above: their nodes are not tracked.
      client.answered_by = epoch
      return replies, nil, trips
    end
  end
  return nil, err, trips, unanswered
end
runner.run_encoded = run_encoded

-- One plain command (a list of strings) -> reply | nil, err; retried once (read-only queries).
function runner.command(client, args)
  if client.cluster then -- at the master of the key's slot (args[2]; none: any master)
    local reply, err = client.cluster:command(args)
    if reply == nil then return nil, err end
    local e = is_error(reply)
    if e then return nil, ("server: %s refused: %s"):format(args[1], e) end
    return reply
  end
  local parts = encode({}, args)
  local err
  local p = pipe.of(client)
  for _ = 1, 2 do
    local replies
    if p then
      replies, err = p:exchange(parts, 1)
    else
      local c
      c, err = conn.open(client)
      if not c then return nil, err end
      replies, err = c:exchange(parts, 1)
      if replies then c:done() end
    end
    if replies then
      local e = is_error(replies[1])
      if e then return nil, ("server: %s refused: %s"):format(args[1], e) end
      return replies[1]
    end
  end
  return nil, err
end

return runner
