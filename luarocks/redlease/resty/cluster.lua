-- A Redis Cluster for the OpenResty backend (redis+cluster://), as the C core follows one
-- (docs/deployments.md, "Cluster"): a slot map per client and worker, shared by its requests and
-- timers, asked of the nodes with CLUSTER SLOTS (serialized, at most once per REFRESH_MIN_MS);
-- each call at the master of its first key's slot, MOVED (the slot is set, the map asked again),
-- ASK (once at the importing node after ASKING), TRYAGAIN and CLUSTERDOWN (back-off), and a node
-- that cannot be reached (the map asked again: a failover) followed until the call's deadline.
-- The watchdog's rounds on a cluster: cluster_renew.lua.
local conn = require "redlease.resty.conn"
local resp = require "redlease.resty.resp"
local runner = require "redlease.resty.runner"
local slots = require "redlease.resty.slots"
local semaphore = require "ngx.semaphore"

local cluster = {}
local Cluster = {}
Cluster.__index = Cluster
local Node = {}
Node.__index = Node

local REFRESH_MIN_MS = 100
local BACKOFF_MIN_MS, BACKOFF_MAX_MS = 20, 500
local encode, is_error = resp.encode, resp.is_error
-- the map, and the node's version (a server without sharded pub/sub is refused), in one trip
local SLOTS = encode(encode({}, { "CLUSTER", "SLOTS" }), { "INFO", "SERVER" })
local ASKING = encode({}, { "ASKING" })

local function now_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

-- The connect options of this node's pool for client c's identity (its connections carry the
-- client's name: one pool per node and identity).
function Node:pool_opts(c)
  if self.opts_uuid ~= c.uuid then
    self.opts, self.opts_uuid = { pool = self.pool .. ":" .. tostring(c.uuid) }, c.uuid
  end
  return self.opts
end

-- ep: the parsed redis+cluster:// URL (slots.parse_url) with its tls_settings; o: the connect
-- options (tls_server_name: the name every node's certificate is checked against, else each
-- node's own host).
function cluster.new(client, ep, o)
  return setmetatable({ client = client, ep = ep, tls_name = o.tls_server_name, nodes = {},
    node_list = {}, polls = 0, polling = false, polled_at = -math.huge, loads = 0, loaded_by = 0,
    map = {}, loaded = false, stale = false, refreshed_at = -math.huge, refreshing = false,
    done = semaphore.new(0), waiting = 0 },
    Cluster)
end

-- The node at host:port (made once, kept).
function Cluster:node(host, port)
  local addr = (host:find(":", 1, true) and "[" .. host .. "]" or host) .. ":" .. port
  local n = self.nodes[addr]
  if n then return n end
  local ep = { host = host, port = port, db = 0, user = self.ep.user, password = self.ep.password,
    tls = self.ep.tls }
  local t = self.ep.tls_settings
  if t and not self.tls_name then -- each node's certificate names the node
    local own = {}
    for k, v in pairs(t) do own[k] = v end
    own.server_name, own.id = host, t.id .. ":" .. host
    t = own
  end
  ep.tls_settings = t
  n = setmetatable({ ep = ep, addr = addr, pool = conn.pool_name(ep) }, Node)
  self.nodes[addr] = n
  self.node_list[#self.node_list + 1] = n -- (poll's turns)
  return n
end

-- nil, or the C core's refusal (csrc/core/topology/server_version.c) of a node whose INFO SERVER
-- answer says it runs a Redis older than 7.0: no sharded pub/sub, which a cluster's waits and
-- releases use. An answer without a version (INFO refused to this user) passes.
local function too_old(info, node)
  if type(info) ~= "string" or info:find("\nvalkey_version:") then return nil end
  local version = info:match("\nredis_version:([^\r\n]*)")
  if not version or (tonumber(version:match("^%d+")) or 7) >= 7 then return nil end
  return ("unsupported: %s runs Redis %s, which lacks sharded pub/sub (SSUBSCRIBE, SPUBLISH): "
    .. "redlease on a Redis Cluster needs Redis 7.0 or later (or Valkey)")
    :format(node.addr, version)
end

-- CLUSTER SLOTS of the mapped masters, then the seeds, in turn (only: that node alone) ->
-- ranges, the node that answered | nil, err, refused (a node too old: the others will not
-- differ)
local function fetch(self, deadline, only)
  local order, tried, err = { only }, {}, "no node to ask"
  if not only then
    for s = 0, slots.COUNT - 1, 512 do order[#order + 1] = self.map[s] end
    for _, s in ipairs(self.ep.seeds) do order[#order + 1] = self:node(s.host, s.port) end
    for _, n in pairs(self.nodes) do order[#order + 1] = n end
  end
  for _, n in ipairs(order) do
    if not tried[n] then
      tried[n] = true
      local left = deadline - now_ms()
      if left < 1 then break end
      local c, cerr = conn.open(self.client, math.min(left, self.client.connect_ms), n)
      if c then
        local replies, xerr = c:exchange(SLOTS, 2)
        if replies then
          c:done()
          local old = too_old(replies[2], n)
          if old then return nil, old, true end
          local e = is_error(replies[1])
          local ranges = not e and slots.ranges(replies[1])
          if ranges and #ranges > 0 then return ranges, n end
          err = e and ("%s refused CLUSTER SLOTS: %s"):format(n.addr, e)
            or n.addr .. " answered CLUSTER SLOTS with no slots"
        else
          err = xerr
        end
      else
        err = cerr
      end
    end
  end
  return nil, err
end

local function load(self, deadline, only)
  -- A refresh and the watchdog's poll may ask at once: the map of the later one begun is kept.
  self.loads = self.loads + 1
  local ticket = self.loads
  local ranges, via, refused = fetch(self,
    math.min(deadline or math.huge, now_ms() + self.client.command_ms), only)
  if refused then return nil, via end
  if ticket < self.loaded_by then return true end
  if not ranges then
    return nil, "connection: no cluster node answered CLUSTER SLOTS (" .. tostring(via) .. ")"
  end
  local map = {}
  for _, r in ipairs(ranges) do
    local node = self:node(r.host or via.ep.host, r.port)
    for s = r.first, r.last do map[s] = node end
  end
  local moved = {}
  if self.loaded then -- slots that changed owner: a failover or a reshard (failover.lua)
    local was = self.map
    for s = 0, slots.COUNT - 1 do
      if was[s] and was[s] ~= map[s] then moved[#moved + 1] = s end
    end
  end
  self.map, self.loaded, self.loaded_by = map, true, ticket
  if #moved > 0 then require("redlease.resty.failover").slots_moved(self.client, moved) end
  return true
end

-- Asks the map again (serialized: a caller that finds a refresh under way waits for it; at
-- most one per REFRESH_MIN_MS), by `deadline` (ngx.now() ms; nil: the command timeout) ->
-- true | nil, err
function Cluster:refresh(deadline)
  if self.refreshing then
    self.waiting = self.waiting + 1
    self.done:wait(math.max(0.001,
      math.min(deadline and (deadline - now_ms()) or math.huge, self.client.command_ms) / 1000))
    self.waiting = self.waiting - 1
    if self.loaded then return true end
    return nil, self.refresh_err or "connection: the cluster's slot map is not known"
  end
  if self.loaded and now_ms() - self.refreshed_at < REFRESH_MIN_MS then return true end
  self.refreshing = true
  local ok, done, err = pcall(load, self, deadline)
  self.refreshing, self.refreshed_at = false, now_ms()
  if self.waiting > 0 then self.done:post(self.waiting) end
  if not ok then error(done, 0) end
  if done then
    self.stale, self.refresh_err = false, nil
    return true
  end
  self.refresh_err = err
  if self.loaded then return true end -- the old map, until the nodes answer
  return nil, err
end

-- Asks one known node for the map, the next in turn (as the C core's rl_cluster_poll), within
-- `ms`, unless a refresh is under way or got an answer within `ms`: the worker hears of a
-- failover that none of its calls met (watchdog.lua runs it while the worker holds locks). In
-- turn, not the first: a master cut off from the others (this worker still reaching it) goes on
-- naming itself the owner of slots the others have given to its replica. A request that needs
-- the map meanwhile does not wait for it: a node that is slow to answer the poll (stopped, cut
-- off) delays nobody.
function Cluster:poll(ms)
  local list = self.node_list
  if self.polling or self.refreshing or not self.loaded or #list == 0
    or now_ms() - math.max(self.refreshed_at, self.polled_at) < ms then
    return
  end
  self.polls = self.polls % #list + 1
  self.polling = true
  local ok, done = pcall(load, self, now_ms() + ms, list[self.polls])
  self.polling = false
  -- (not refreshed_at: a request that meets a MOVED still asks at once, whom the poll asked
  -- may be a cut-off master)
  if ok and done then self.polled_at = now_ms() end
  if not ok then error(done, 0) end
end

-- The master serving `slot` (a map asked again by `deadline`, when it must be) -> node | nil, err
function Cluster:node_of(slot, deadline)
  if not self.loaded or self.stale then
    local ok, err = self:refresh(deadline)
    if not ok then return nil, err end
  end
  local n = self.map[slot]
  if not n then return nil, ("connection: no cluster node serves slot %d"):format(slot) end
  return n
end

-- A MOVED answer: the slot is the node's from now on, and the map is asked again.
function Cluster:moved(slot, node)
  local was = self.map[slot]
  self.map[slot] = node
  self.stale = true
  if was and was ~= node then
    require("redlease.resty.failover").slots_moved(self.client, { slot })
  end
end

local function sleep_ms(ms, deadline)
  local left = deadline - now_ms()
  if left > 1 then ngx.sleep(math.min(ms, left - 1) / 1000) end
end

-- Sends one encoded command to the master of `slot`, following the cluster until `deadline`
-- (ngx.now() ms). script: an EVALSHA (NOSCRIPT loads the scripts there). -> reply (any but a
-- redirect), nil, round trips, false, the node that answered | nil, err, round trips,
-- unanswered (sent, no answer: it may have run)
function Cluster:exec(slot, parts, idempotent, deadline, script)
  local client = self.client
  local ask, backoff, trips, unanswered, err = nil, BACKOFF_MIN_MS, 0, false, nil
  while true do
    local left = deadline - now_ms()
    if left < 1 then
      return nil, err or runner.NO_TIME, trips, unanswered
    end
    local node = ask
    if not node then
      node, err = self:node_of(slot, deadline)
      -- no map (no node answered CLUSTER SLOTS, or none serves the slot): said at once, as the
      -- C core's rl_cluster_owner does; a refused certificate never turns into a wait
      if not node then return nil, err, trips, unanswered end
    end
    local c
    c, err = conn.open(client, left, node)
    local wait = true
    if c then
      local send, n = parts, 1
      if ask then
        send, n = { ASKING[1], ASKING[2], ASKING[3], ASKING[4] }, 2
        for i = 1, #parts do send[#send + 1] = parts[i] end
      end
      local replies
      replies, err = c:exchange(send, n)
      if replies and script and runner.is_noscript(replies[n]) then
        local ok, lerr = runner.load_all(c)
        if not ok then
          c.sock:close()
          return nil, lerr, trips + c.exchanges, unanswered
        end
        replies, err = c:exchange(send, n)
      end
      trips = trips + c.exchanges
      if replies then
        c:done()
        local r = replies[n]
        local e = is_error(r)
        local kind, s, host, port = nil, nil, nil, nil
        if e then kind, s, host, port = slots.redirect(e) end
        if kind == "MOVED" then
          self:moved(s, self:node(host or node.ep.host, port))
          ask, wait = nil, false
        elseif kind == "ASK" then
          ask, wait = self:node(host or node.ep.host, port), false
        elseif e and (e:sub(1, 8) == "TRYAGAIN" or e:sub(1, 11) == "CLUSTERDOWN") then
          ask, err = nil, ("server: %s answered %s"):format(node.addr, e)
        else
          return r, nil, trips, false, node
        end
      else
        unanswered = true
        if not idempotent then return nil, err, trips, true end
        self.stale, ask = true, nil
      end
    else
      self.stale, ask = true, nil -- cannot connect: the slot may have a new master
    end
    if wait then
      sleep_ms(backoff, deadline)
      backoff = math.min(backoff * 2, BACKOFF_MAX_MS)
    end
  end
end

-- A cluster's lock scripts publish with SPUBLISH (sharded, as Redisson on Redis 7): the calls'
-- "publish" argument becomes "spublish" (fenced_set publishes nothing: its value stays).
local function sharded(call)
  if call[1] == "fenced_set" then return call end
  local out = {}
  for i = 1, #call do out[i] = call[i] end
  for i = 3 + call[2], #out do
    if out[i] == "publish" then out[i] = "spublish" end
  end
  return out
end
cluster.sharded = sharded
cluster.now_ms = now_ms

-- runner.run on a cluster: each call ({script, nkeys, keys..., args...}) at the master of its
-- first key's slot, one after the other, within timeout_ms (else the command timeout).
-- -> replies, nil, trips | nil, err, trips, unanswered. client.answered_by: the identity of the
-- server that answered the last call (conn.identity), read by the caller with no yield since.
function Cluster:run(calls, idempotent, timeout_ms)
  local deadline = now_ms() + (timeout_ms or self.client.command_ms)
  local replies, trips, node = {}, 0, nil
  for i, call in ipairs(calls) do
    local parts = runner.encode_call({}, sharded(call))
    local r, err, t, unanswered
    r, err, t, unanswered, node = self:exec(slots.of(call[3]), parts, idempotent, deadline, true)
    trips = trips + (t or 0)
    if r == nil then return nil, err, trips, unanswered end
    replies[i] = r
  end
  self.client.answered_by = node and node.server
  return replies, nil, trips
end

-- runner.command on a cluster: at the master of args[2]'s slot (no key: slot 0's). -> reply |
-- nil, err
function Cluster:command(args)
  local slot = args[2] and slots.of(tostring(args[2])) or 0
  local r, err = self:exec(slot, encode({}, args), true, now_ms() + self.client.command_ms)
  if r == nil then return nil, err end
  return r
end

-- Read-only commands (inspect.lua), each at the master of its key's slot, one after the other;
-- PUBSUB NUMSUB becomes SHARDNUMSUB at the channel's master (a cluster's waiters are sharded).
-- -> replies | nil, err
function Cluster:each(commands)
  local deadline = now_ms() + self.client.command_ms
  local replies = {}
  for i, args in ipairs(commands) do
    local key = args[2]
    if args[1] == "PUBSUB" and args[2] == "NUMSUB" then
      args = { "PUBSUB", "SHARDNUMSUB", args[3] }
      key = args[3]
    end
    local r, err = self:exec(slots.of(key), encode({}, args), true, deadline)
    if r == nil then return nil, err end
    replies[i] = r
  end
  return replies
end

-- Unlock latches: each deleted at its own slot's master (best effort: they expire by their TTL).
function Cluster:delete(del)
  local deadline = now_ms() + self.client.command_ms
  for i = 2, #del do
    self:exec(slots.of(del[i]), encode({}, { "DEL", del[i] }), true, deadline)
  end
end

-- A name whose keys would fall in different slots (a '}' with no '{' before it, or empty braces
-- first) cannot be used on a cluster, for Redisson either: refused before anything is sent, in
-- the C core's words (csrc/core/names.c). Raised at the level of the caller of client:lock().
function Cluster.check_name(name, what)
  if slots.name_fits(name) then return end
  error(("bad argument #1 (the %s name \"%s\" cannot be used on a Redis Cluster: its keys would "
    .. "fall in different slots (a '}' with no '{' before it, or empty braces first))")
    :format(what, (name:sub(1, 60):gsub("[^\32-\126]", "?"))), 4)
end

-- The watchdog's round on a cluster (cluster_renew.lua).
function Cluster:renew(holds, batch_of, timeout_ms)
  return require("redlease.resty.cluster_renew").round(self, holds, batch_of, timeout_ms)
end

return cluster
