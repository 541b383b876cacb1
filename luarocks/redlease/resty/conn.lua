-- Command connections: a cosocket from nginx's keepalive pool per call (a cosocket cannot outlive
-- the request or timer that made it). A new connection (getreusedtimes() == 0) gets the TLS
-- handshake, AUTH, SELECT and CLIENT SETNAME once; then it goes back to the pool (one pool per
-- client identity, so that a connection keeps its client's name). Unlock latches waiting to be
-- deleted ride along with the next exchange (see client:delete_latch).
local resp = require "redlease.resty.resp"
local tls = require "redlease.resty.tls"
local url = require "redlease.resty.url"

local conn = {}
local Conn = {}
Conn.__index = Conn

local tcp = ngx.socket.tcp
local encode, is_error, null = resp.encode, resp.is_error, resp.null
local ARRAY, BULK = resp.ARRAY, resp.BULK
local concat = table.concat
local new_tab = require "table.new" -- (sized at birth: no resize when filled)

-- A connection is its own reply reader (resp.lua's Reader: the fields sock, buf, pos, mark,
-- timeout_ms and deadline; conn.reader is the connection itself).
Conn.read, Conn.pending = resp.Reader.read, resp.Reader.pending

-- Connections given back by conn.recycle, made anew by conn.open: a lock call then allocates
-- no table of its own for its connection.
local spare, spares, SPARES_KEPT = {}, 0, 16

-- ep: where the connection goes (a target of the client's resolver carries its epoch: a
-- failure there makes the resolver ask where the master is again).
local function fail(c, ep, what, err)
  if ep.epoch then c.resolver:doubt(ep.epoch) end
  return nil, ("connection: %s %s: %s"):format(what, url.where(ep), err)
end

-- The pool name: one pool per endpoint, database and credentials.
function conn.pool_name(ep)
  local where = ep.unix and "unix:" .. ep.path or ep.host .. ":" .. ep.port
  local t = ep.tls_settings
  return ("redlease:%s:%d:%s:%s:%s"):format(where, ep.db or 0, t and "tls:" .. t.id or "plain",
    ep.user or "", ep.password and ngx.md5(ep.password) or "")
end

-- The server's identity from its INFO replication answer: its replication id, which a restart
-- or a replica's promotion changes (the C core's rl_identity_of) -> string | nil. A hold
-- confirmed by one server and found gone by another was lost to a failover (watchdog.lua).
function conn.identity(info)
  return type(info) == "string" and info:match("\nmaster_replid:(%w+)") or nil
end

-- Opens (or takes from the pool) a connection for client c -> Conn | nil, err. timeout_ms: a
-- shorter bound than the client's timeouts for this use of it. node: a cluster node (cluster.lua:
-- its endpoint and pool) instead of the client's endpoint.
function conn.open(c, timeout_ms, node)
  local ep, connect_opts = c.ep, c.connect_opts
  if node then
    ep, connect_opts = node.ep, node:pool_opts(c)
  elseif c.resolver then -- the master of a deployment that moves it (sentinel.lua)
    local rerr
    ep, rerr = c.resolver:target()
    if not ep then return nil, rerr end
    connect_opts = ep.connect_opts
  end
  local sock = tcp()
  local command_ms = timeout_ms and math.min(timeout_ms, c.command_ms) or c.command_ms
  sock:settimeouts(math.min(c.connect_ms, command_ms), command_ms, command_ms)
  local ok, err
  if ep.unix then
    ok, err = sock:connect("unix:" .. ep.path, connect_opts)
  else
    ok, err = sock:connect(ep.host, ep.port, connect_opts)
  end
  if not ok then return fail(c, ep, "cannot connect to", err) end
  local self
  if spares > 0 then
    self = spare[spares]
    spare[spares], spares = nil, spares - 1
    self.sock, self.buf, self.pos, self.mark, self.timeout_ms = sock, "", 1, 1, command_ms
    self.client, self.exchanges, self.command_ms, self.ep = c, 0, command_ms, ep
    self.node = node or false
  else
    self = setmetatable({ sock = sock, buf = "", pos = 1, mark = 1, timeout_ms = command_ms,
      deadline = false, client = c, exchanges = 0, command_ms = command_ms, ep = ep,
      node = node or false }, Conn)
    self.reader = self
  end
  if sock:getreusedtimes() == 0 then
    local t = ep.tls_settings
    if t then
      local done, herr = tls.handshake(sock, t, ep.host)
      if not done then return fail(c, ep, "TLS handshake with", herr) end
    end
    local parts, n, what = {}, 0, {}
    if ep.password then
      encode(parts, ep.user and { "AUTH", ep.user, ep.password } or { "AUTH", ep.password })
      n = n + 1
      what[n] = "AUTH"
    end
    if ep.db and ep.db ~= 0 then
      encode(parts, { "SELECT", ep.db })
      n = n + 1
      what[n] = "SELECT"
    end
    local role_at
    if ep.must_be_master then -- a Sentinel's master: still the master? (a failover under way)
      encode(parts, { "ROLE" })
      n = n + 1
      what[n], role_at = "ROLE", n
    end
    if c.conn_name then -- as the core's: a refusal (an ACL) leaves the connection unnamed
      encode(parts, { "CLIENT", "SETNAME", c.conn_name })
      n = n + 1
    end
    local identity_at
    if node then -- which server the node is now (conn.identity); a refusal (an ACL): unknown
      encode(parts, { "INFO", "replication" })
      n = n + 1
      identity_at = n
    end
    if n > 0 then
      local replies, xerr = self:raw_exchange(parts, n)
      if not replies then return nil, xerr end
      for i = 1, n do
        local e = what[i] and is_error(replies[i])
        if e then
          sock:close()
          return nil, ("connection: %s refused: %s"):format(what[i], e)
        end
      end
      if identity_at then node.server = conn.identity(replies[identity_at]) end
      local role = role_at and replies[role_at]
      if role and (type(role) ~= "table" or role[1] ~= "master") then
        sock:close()
        c.resolver:doubt(ep.epoch)
        return nil, ("connection: %s is no master (a failover under way?)"):format(url.where(ep))
      end
    end
  end
  return self
end

-- Sends the encoded commands (one string, or a list of pieces), reads n replies, all within the
-- command timeout (a deadline for the whole exchange, not per read). Closes the connection on
-- any failure. skip: that many replies come first and are read and dropped (a latch DEL's).
function Conn:raw_exchange(parts, n, skip)
  local sock = self.sock
  self.exchanges = self.exchanges + 1 -- round trips, for the watchdog's counters
  ngx.update_time()
  local reader = self.reader
  reader.deadline = ngx.now() + self.command_ms / 1000
  if reader.timeout_ms ~= self.command_ms then -- (a read of the last exchange shortened it)
    sock:settimeout(self.command_ms)
    reader.timeout_ms = self.command_ms
  end
  -- one string, or two pieces: nginx walks a table of pieces twice through the Lua C API
  -- (lua_next, then lua_rawgeti per piece), which costs more than joining many of them here
  local ok, err = sock:send(type(parts) == "table" and #parts > 2 and concat(parts) or parts)
  if not ok then
    reader.deadline = false
    sock:close()
    return fail(self.client, self.ep, "lost the connection to", err)
  end
  local replies = new_tab(n, 0)
  skip = skip or 0
  local v, rerr
  if n == 1 and skip <= 1 then -- (no loop for one call, with a latch DEL or not: see line_end)
    if skip == 1 then v, rerr = reader:read() end
    if skip == 0 or v ~= nil then
      v, rerr = reader:read()
      replies[1] = v
    end
  else
    for i = 1 - skip, n do
      v, rerr = reader:read()
      if v == nil then break end
      if i > 0 then replies[i] = v end
    end
  end
  if v == nil then
    reader.deadline = false
    sock:close()
    return fail(self.client, self.ep, "no answer from", rerr)
  end
  reader.deadline = false
  return replies
end

-- Sends the commands of `parts` (n of them; a string or a list of pieces) after any pending latch
-- deletion, reads the n answers. -> replies | nil, err
function Conn:exchange(parts, n)
  -- (not on a cluster node: the latches' slots are anywhere; cluster.lua deletes them)
  local latches = not self.node and self.client:take_latches()
  if latches then
    local all
    if #latches == 2 then -- {"DEL", key}: the most often
      local key = latches[2]
      all = ARRAY[2] .. "$3\r\nDEL\r\n" .. BULK[#key] .. key .. "\r\n"
    else
      all = concat(encode({}, latches))
    end
    if type(parts) == "table" then
      all = { all }
      for i = 1, #parts do all[i + 1] = parts[i] end
    else
      all = all .. parts
    end
    local replies, err = self:raw_exchange(all, n, 1) -- (DEL's count: nothing to learn from it)
    if not replies then
      self.client:give_back_latches(latches)
      return nil, err
    end
    return replies
  end
  return self:raw_exchange(parts, n)
end

-- Back to the pool, unless something is left unread.
function Conn:done()
  if self:pending() then
    self.sock:close()
  else
    self.sock:setkeepalive(self.client.keepalive_ms, self.client.pool_size)
  end
end

-- The connection object c, done with (c:done() or closed) and no longer referred to by its
-- caller, is made anew by a later conn.open. (Its fields become false, not nil, here and in
-- raw_exchange: a key that is removed and set again makes LuaJIT rehash the table.)
function conn.recycle(c)
  if spares >= SPARES_KEPT then return end
  c.sock, c.buf, c.client, c.ep, c.node, c.deadline = false, "", false, false, false, false
  spares = spares + 1
  spare[spares] = c
end

conn.null = null
return conn
