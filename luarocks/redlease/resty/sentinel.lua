-- redis+sentinel:// for the OpenResty backend, with the C core's semantics
-- (csrc/core/topology/sentinel.c, docs/deployments.md): the master is asked of the sentinels in
-- order (SENTINEL get-master-addr-by-name), every new connection to it checks with ROLE that it
-- is the master (conn.lua), and a connection that fails or a READONLY answer puts the master in
-- doubt, so that the next connection asks again. Each worker has a watcher per sentinel (a
-- timer, its own connection and backoff; csrc/core/topology/sentinel_watch.c), subscribed to
-- +switch-master: sentinels announce a failover up to seconds apart, and the first to hear of
-- it moves the worker to the new master (failover_grace counts on holders hearing early): the
-- holds go in doubt and the watchdog runs a round there, the subscriber reconnects and its
-- waiters try again there. When no sentinel can be asked, the last master they named is used
-- (ROLE refuses it if it is one no longer), and one watcher asks them again in the background.
-- rediss+sentinel://: TLS to the sentinels (the questions and the watchers' subscriptions) and to
-- the master, with the same settings (tls.lua), each certificate checked against the host
-- connected to (a sentinel's, the master's as they name it) unless tls_server_name names one.
--
-- The connection layer sees only a resolver: target() (the master's endpoint now, with its
-- epoch), doubt(epoch) and epoch().
local resp = require "redlease.resty.resp"
local semaphore = require "ngx.semaphore"
local tls_layer = require "redlease.resty.tls"
local url = require "redlease.resty.url"

local sentinel = {}
local S = {}
S.__index = S

local ASK_AT_MOST_EVERY_MS = 100 -- a burst of doubts (every connection failing) asks once
local WATCH_RETRY_MIN_MS, WATCH_RETRY_MAX_MS = 100, 2000
local SLICE_S = 1 -- how often the watcher looks at its stop conditions
local PING_S = 10 -- it sends a PING when it sent nothing for that long (a read is no clock)

local encode, is_error, null = resp.encode, resp.is_error, resp.null
local now, log, WARN = ngx.now, ngx.log, ngx.WARN

local function now_ms()
  ngx.update_time()
  return now() * 1000
end

-- ---- the URL: redis+sentinel://[user[:password]@]host1:port1[,host2...]/<master>[/db] ------

local function host_port(s)
  if s == "" then return nil, "an empty host in the sentinels' list" end
  local has_port = s:find("^%[.*%]:") or (s:sub(1, 1) ~= "[" and s:find(":", 1, true))
  local ep, why = url.parse("redis://" .. s .. (has_port and "" or ":26379"))
  if not ep then return nil, why end
  return { host = ep.host, port = ep.port }
end

-- -> endpoint { sentinel = true, sentinels = {{host =, port =}...}, master_name =, db =, user =,
-- password =, tls = } | nil, why
function sentinel.parse(s)
  local tls = s:sub(1, 18) == "rediss+sentinel://"
  local rest = s:sub(tls and 19 or 18)
  local slash = rest:find("/", (rest:match("^.*()@") or 1), true)
  local authority, path = rest:sub(1, (slash or #rest + 1) - 1), slash and rest:sub(slash) or ""
  local ep = { sentinel = true, tls = tls or nil, db = 0, sentinels = {} }
  local at = authority:match(".*()@")
  if at then
    -- the userinfo, decoded by the plain URL's rules
    local parsed = url.parse("redis://" .. authority:sub(1, at) .. "x")
    if not parsed then return nil, "bad percent-escape in the URL's user or password" end
    ep.user, ep.password = parsed.user, parsed.password
    authority = authority:sub(at + 1)
  end
  for item in (authority .. ","):gmatch("([^,]*),") do
    local hp, why = host_port(item)
    if not hp then return nil, why end
    ep.sentinels[#ep.sentinels + 1] = hp
  end
  local name, db = path:match("^/([^/]+)(.*)$")
  if not name then
    return nil, "a redis+sentinel:// URL names the master: .../<master name>[/db]"
  end
  local decoded = url.parse("redis://x:" .. name .. "@x")
  if not decoded then return nil, "bad master name in the URL" end
  ep.master_name = decoded.password
  if db ~= "" and db ~= "/" then
    local n = db:match("^/(%d+)$")
    ep.db = n and #n <= 9 and tonumber(n) <= 1000000 and tonumber(n)
    if not ep.db then return nil, "the URL's database (after '/') must be a number" end
  end
  return ep
end

-- ---- asking the sentinels ------------------------------------------------------------------

function sentinel.new(client, o)
  -- watchers[i]: sentinel i's watcher; watching: one of them runs; ask_wanted: a poke that no
  -- watcher has taken yet
  local watchers = {}
  for i = 1, #client.ep.sentinels do
    watchers[i] = { i = i, wake = semaphore.new(0), running = false, listening = false }
  end
  return setmetatable({ client = client, ep = client.ep, epoch_n = 0, doubted = false,
    asked_at = -math.huge, down = false, asking = false, asked = semaphore.new(0), waiting = 0,
    watchers = watchers, watching = false, ask_wanted = false, user = o and o.sentinel_user,
    password = o and o.sentinel_password }, S)
end

-- The same settings for a new worker identity (nothing learned is kept).
function S:fresh()
  return sentinel.new(self.client, { sentinel_user = self.user, sentinel_password = self.password })
end

local function closed(self)
  return self.client.shut or self.client.resolver ~= self
end

-- A connection to sentinel i, AUTHed when sentinel_password is set -> sock, reader | nil, err.
local function open_sentinel(self, i, read_ms)
  local c, at = self.client, self.ep.sentinels[i]
  local sock = ngx.socket.tcp()
  sock:settimeouts(c.connect_ms, c.command_ms, read_ms or c.command_ms)
  local ok, err = sock:connect(at.host, at.port)
  if not ok then return nil, ("cannot connect to sentinel %s: %s"):format(url.where(at), err) end
  local t = self.ep.tls_settings -- rediss+sentinel://: the sentinels speak TLS too
  if t then
    ok, err = tls_layer.handshake(sock, t, at.host)
    if not ok then
      return nil, ("TLS handshake with sentinel %s: %s"):format(url.where(at), err)
    end
  end
  local reader = resp.reader(sock)
  if self.password then
    sock:send(encode({}, self.user and { "AUTH", self.user, self.password }
      or { "AUTH", self.password }))
    local r, rerr = reader:read()
    local refused = r and is_error(r)
    if r == nil or refused then
      sock:close()
      return nil, ("sentinel %s: authentication %s"):format(url.where(at),
        refused and "refused: " .. refused or "failed: " .. tostring(rerr))
    end
  end
  return sock, reader
end

-- SENTINEL get-master-addr-by-name on sentinel i -> 1, host, port | 0 (no such master) |
-- -1, why.
local function ask_one(self, i)
  local sock, reader = open_sentinel(self, i)
  if not sock then return -1, reader end
  local ok, err = sock:send(encode({}, { "SENTINEL", "get-master-addr-by-name",
    self.ep.master_name }))
  local r
  if ok then r, err = reader:read() end
  sock:close()
  if r == nil then
    return -1, ("sentinel %s: %s"):format(url.where(self.ep.sentinels[i]), tostring(err))
  end
  if r == null then return 0 end
  local e = is_error(r)
  if e then return -1, "SENTINEL get-master-addr-by-name refused: " .. e end
  local port = type(r) == "table" and tonumber(r[2])
  if type(r[1]) ~= "string" or not port or port < 1 then
    return -1, "SENTINEL get-master-addr-by-name: an answer that is no address"
  end
  return 1, r[1], port
end

-- Takes a new address; true when it differs from a master known before.
local function set_master(self, host, port)
  self.doubted, self.down = false, false
  local m = self.master
  if m and m.host == host and m.port == port then return false end
  self.epoch_n = self.epoch_n + 1
  local ep, c = self.ep, self.client
  local target = { host = host, port = port, db = ep.db, user = ep.user, password = ep.password,
    tls_settings = ep.tls_settings, epoch = self.epoch_n, must_be_master = true }
  -- a pool per master and epoch: a connection pooled before a move is never taken after it
  target.connect_opts = { pool = ("%s:%s:%d"):format(require("redlease.resty.conn")
    .pool_name(target), c.uuid or "", self.epoch_n) }
  self.master = target
  return m ~= nil
end

local moved -- (below)

-- Asks the sentinels in order until one names the master; after budget_ms (0: none) no further
-- sentinel is tried. -> true | nil, err, how many answered.
local function ask(self, budget_ms)
  local ep, reasons, unknown = self.ep, nil, 0
  local started = now_ms()
  for i = 1, #ep.sentinels do
    if closed(self) then return nil, "closed: the client is closed", 0 end
    if i > 1 and budget_ms > 0 and now_ms() - started >= budget_ms then break end
    local found, host, port = ask_one(self, i)
    if found == 1 then
      if set_master(self, host, port) then moved(self) end
      return true
    end
    if found == 0 then unknown = unknown + 1 else reasons = reasons or host end
  end
  if unknown > 0 then
    return nil, ('connection: the sentinels know no master named "%s"'):format(ep.master_name),
      unknown
  end
  return nil, ('connection: no sentinel could be asked for master "%s" (%s)'):format(
    ep.master_name, reasons or "closed"), 0
end

-- One ask at a time: a caller arriving during one waits for it (and, unless `force`, takes its
-- answer). -> true | nil, err, how many answered.
local function ask_and_take(self, force, budget_ms)
  while self.asking do
    self.waiting = self.waiting + 1
    local c = self.client
    self.asked:wait((c.connect_ms + c.command_ms) * #self.ep.sentinels / 1000)
    self.waiting = self.waiting - 1
    if not force and self.master and not self.doubted then return true end
  end
  self.asking = true
  self.asked_at = now_ms()
  local ok, err, reached = ask(self, budget_ms)
  self.asking = false
  self.asked_at = now_ms()
  if not ok and reached == 0 and not err:find("^closed") then self.down = true end
  if self.waiting > 0 then self.asked:post(self.waiting) end
  return ok, err, reached or 1
end

local start_watcher -- (below)

local function wake(w)
  if w.wake:count() <= 0 then w.wake:post(1) end
end

-- A caller found the master doubtful and the sentinels down: one watcher asks them again, a
-- listening one when there is one (any watcher takes a poke it finds pending, once).
local function poke(self)
  self.ask_wanted = true
  local pick
  for _, w in ipairs(self.watchers) do
    if w.running and (not pick or (w.listening and not pick.listening)) then pick = w end
  end
  if pick then wake(pick) end
end

-- true for the one watcher that takes a pending poke.
local function take_poke(self)
  local wanted = self.ask_wanted
  self.ask_wanted = false
  return wanted
end

-- The master's endpoint now (asked of the sentinels when unknown or in doubt) -> target | nil,
-- err. target.epoch counts the masters this worker has followed.
function S:target()
  if closed(self) then return nil, "closed: the client is closed" end
  local t = now_ms()
  local known = self.master ~= nil
  -- sentinels found down are asked again at most every WATCH_RETRY_MAX_MS: each failed
  -- question is an nginx error line (connect() failed, read timed out)
  local due = self.doubted
    and t - self.asked_at >= (self.down and WATCH_RETRY_MAX_MS or ASK_AT_MOST_EVERY_MS)
  -- with a master known, nobody waits for sentinels being asked, nor for sentinels found down:
  -- the watcher asks them in the background, and ROLE checks the known master meanwhile
  local behind = known and due and (self.asking or (self.down and self.watching))
  if behind and not self.asking then
    self.asked_at = t
    poke(self)
  end
  if not known or (due and not behind) then
    local ok, err, reached = ask_and_take(self, false, known and self.client.command_ms or 0)
    if not ok and (not known or reached > 0 or err:find("^closed")) then return nil, err end
    if not ok then poke(self) end -- the sentinels are down: the master known, asked again later
    start_watcher(self)
  end
  return self.master
end

-- A connection to the master of `epoch` failed, or it answered as no master: ask again.
function S:doubt(epoch)
  if epoch == self.epoch_n then self.doubted = true end
end

function S:epoch() return self.epoch_n end

-- ---- following the master -------------------------------------------------------------------

moved = function(self)
  local c, m = self.client, self.master
  log(WARN, ('redlease: the sentinels name a new master for "%s": %s; the holds are verified '
    .. "there and the waiters resubscribe there"):format(self.ep.master_name, url.where(m)))
  require("redlease.resty.failover").master_moved(c)
end

-- "<master name> <old ip> <old port> <new ip> <new port>" for our master: takes the new one.
local function switch_master(self, payload)
  local name, host, port = payload:match("^(%S+) %S+ %S+ (%S+) (%d+)$")
  if name ~= self.ep.master_name then return end
  if set_master(self, host, tonumber(port)) then moved(self) end
end

local function stopping(self)
  return closed(self) or ngx.worker.exiting()
end

local function any_listening(self)
  for _, w in ipairs(self.watchers) do
    if w.listening then return true end
  end
  return false
end

local function read_loop(self, w, reader)
  while w.listening do
    local r, err = reader:read()
    if r == nil then
      w.last_error = err
      w.listening = false
      wake(w)
    elseif type(r) == "table" and r[1] == "message" and type(r[3]) == "string" then
      switch_master(self, r[3])
    end
  end
end

-- Watcher w subscribed on its sentinel: follows +switch-master until the connection fails or
-- the watchers stop. A switch may have happened while no watcher of this worker listened: the
-- first to subscribe asks again.
local function listen_on(self, w)
  local c = self.client
  local sock, reader = open_sentinel(self, w.i, (PING_S + SLICE_S) * 1000 + c.command_ms)
  if not sock then return end
  local ok = sock:send(encode({}, { "SUBSCRIBE", "+switch-master" }))
  if not ok then return sock:close() end
  local first = not any_listening(self)
  w.listening = true
  local thread = ngx.thread.spawn(read_loop, self, w, reader)
  if take_poke(self) or first then ask_and_take(self, true, 0) end
  local sent_at = now()
  while w.listening and not stopping(self) do
    w.wake:wait(SLICE_S)
    if w.listening and not stopping(self) and take_poke(self) then ask_and_take(self, true, 0) end
    if now() - sent_at >= PING_S then
      if not sock:send(encode({}, { "PING" })) then break end
      sent_at = now()
    end
  end
  w.listening = false
  if not ngx.thread.kill(thread) then ngx.thread.wait(thread) end
  sock:close()
end

-- Sentinel w.i's watcher (a timer): listens there, and after a failure connects again, backing
-- off to every WATCH_RETRY_MAX_MS.
local function watch(premature, self, w)
  local backoff = WATCH_RETRY_MIN_MS
  while not premature and not stopping(self) do
    local started = now_ms()
    listen_on(self, w)
    if stopping(self) then break end
    if now_ms() - started > WATCH_RETRY_MAX_MS then backoff = WATCH_RETRY_MIN_MS end
    w.wake:wait(backoff / 1000)
    if not stopping(self) and take_poke(self) then ask_and_take(self, true, 0) end
    backoff = math.min(backoff * 2, WATCH_RETRY_MAX_MS)
  end
  w.running = false
  self.watching = false
  for _, other in ipairs(self.watchers) do
    if other.running then self.watching = true end
  end
end

-- Starts the watchers not running (one whose timer could not be made is tried again at the
-- next ask).
start_watcher = function(self)
  if ngx.worker.exiting() then return end
  -- without watchers, calls still find the master; failovers are seen at the next doubt
  for _, w in ipairs(self.watchers) do
    if not w.running and ngx.timer.at(0, watch, self, w) then
      w.running, self.watching = true, true
    end
  end
end

-- Stops the watchers (client:close()): each has its own wake.
function S:stop()
  for _, w in ipairs(self.watchers) do wake(w) end
end

return sentinel
