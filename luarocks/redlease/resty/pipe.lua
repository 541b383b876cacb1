-- One pipelined connection per client and worker, shared by the calls of every request: a call
-- queues its bytes and waits on a semaphore of its own; a timer owns the connection (a cosocket
-- lives only as long as the request or timer that made it). The timer's thread writes all that
-- is queued in one send, and a light thread of it reads the replies in order and hands each
-- call its own (a cosocket is full duplex: one thread may read while another writes). Redis and
-- the worker then pay a read, a write and a wake-up per batch instead of per call: the cost
-- that kept a request's lock dearer than the polling SET NX lock (docs/openresty.md, "Cost").
--
-- What sharing a connection changes, and how each case keeps the direct path's answers:
-- - a call with no answer within its time fails alone, as sent and unanswered (takeback.lua
--   settles an acquire); its late answer is read and dropped;
-- - no answer for the command timeout while one is due, or a read or write error: the
--   connection is given up and every call sent on it fails as unanswered; calls not yet sent
--   go on the next connection;
-- - a call that was never sent fails as not sent (nothing may have run);
-- - latches waiting to be deleted ride in front of a batch (their DEL's answer is dropped);
-- - the worker exiting, the client closed, or the pipe idle for IDLE_S: the timer ends once
--   nothing is due, and the connection goes back to nginx's pool. Calls made then take the
--   direct path (conn.lua), as do a Sentinel's or a cluster's (their masters move: see
--   docs/openresty.md) and those of a client past the worker's PIPES_MAX.
local conn = require "redlease.resty.conn"
local resp = require "redlease.resty.resp"
local url = require "redlease.resty.url"
local semaphore = require "ngx.semaphore"
local new_tab = require "table.new"

local pipe = {}
local Pipe = {}
Pipe.__index = Pipe

local PIPES_MAX = 8 -- timers per worker (a client made per request must not take them all)
local IDLE_S = 10 -- a pipe with no call for that long ends; the next call starts it again
local WAKE_S = 1 -- how often an idle writer looks whether the worker exits
local running = 0
local exiting = ngx.worker.exiting

-- An entry's state
local QUEUED, SENT, DONE, FAILED = 1, 2, 3, 4

-- Entries (with their semaphores) of answered calls, reused: a call then allocates only the
-- table of its replies. An entry whose caller stopped waiting is not reused (its semaphore may
-- still be posted).
local spare, spares, SPARES_KEPT = {}, 0, 64

local function entry()
  if spares > 0 then
    local e = spare[spares]
    spare[spares], spares = nil, spares - 1
    return e
  end
  return { bytes = false, n = 0, got = 0, replies = false, state = QUEUED, err = false,
    abandoned = false, latches = false, sent = false, sent_at = 0, sema = semaphore.new() }
end

local function recycle(e)
  if spares >= SPARES_KEPT or e.sema:count() ~= 0 then return end
  e.bytes, e.replies, e.err, e.latches = false, false, false, false
  spares = spares + 1
  spare[spares] = e
end

-- The pipe of client c, started if need be -> Pipe | nil (the direct path then).
function pipe.of(c)
  if c.resolver or c.cluster or exiting() then return nil end
  local p = c.pipe
  if p and p.running then return p end
  if c.shut or running >= PIPES_MAX then return nil end
  if not p then
    p = setmetatable({ client = c, running = false, queue = {}, nq = 0, inflight = {},
      head = 1, tail = 0, wake = semaphore.new(), c = false, reader = false, broken = false,
      last_call = 0 }, Pipe)
    c.pipe = p
  end
  local ok = ngx.timer.at(0, pipe.serve, p)
  if not ok then return nil end
  p.running = true
  running = running + 1
  return p
end

local function where(p)
  return url.where(p.c and p.c.ep or p.client.ep)
end

-- Wakes the caller of entry e with its outcome (the caller reads e.state and e.replies).
local function finish(e, state, err)
  e.state, e.err = state, err or false
  if not e.abandoned then e.sema:post(1) end
end

-- The connection is given up: every call sent on it fails as unanswered (why: the error);
-- latches it carried go back to the client. Called by the writer, with the reader ended.
local function give_up(p, why)
  local c = p.c
  if c then c.sock:close() end
  p.c, p.broken = false, false
  local err = ("connection: no answer from %s: %s"):format(c and url.where(c.ep) or where(p), why)
  local inflight = p.inflight
  for i = p.head, p.tail do
    local e = inflight[i]
    inflight[i] = nil
    if e.latches then p.client:give_back_latches(e.latches) end
    if e.bytes then finish(e, FAILED, err) end
  end
  p.head, p.tail = 1, 0
end

-- The reader thread: each reply to the call at the head of the in-flight list, until a read
-- fails (p.broken says why; the writer then gives the connection up). It never uses a read
-- timeout as a clock (each expiry would be an "[error] lua tcp socket read timed out" line under
-- nginx's default lua_socket_log_errors on): the writer gives up a connection whose due answer
-- is later than the command timeout, and stops this thread with ngx.thread.kill.
local function read_replies(p, c)
  local inflight = p.inflight
  while true do
    local v, err = c:read()
    if v == nil then
      p.broken = err
      break
    end
    local e = inflight[p.head]
    if not e then
      p.broken = "an answer nobody asked for"
      break
    end
    local got = e.got + 1
    e.got = got
    if e.replies then e.replies[got] = v end
    if got == e.n then
      inflight[p.head] = nil
      local head = p.head + 1
      if head > p.tail then -- (empty: indices start again, so that the list stays an array)
        p.head, p.tail = 1, 0
      else
        p.head = head
      end
      if e.bytes then finish(e, DONE) end
    end
  end
end

local function reader(p, c)
  local ok, err = pcall(read_replies, p, c)
  if not ok then
    ngx.log(ngx.ERR, "redlease: reading the answers of the worker's shared connection failed: ",
      err)
    p.broken = "failed"
  end
  p.wake:post(1)
end

local function stop_reader(p)
  if p.reader then
    if not ngx.thread.kill(p.reader) then ngx.thread.wait(p.reader) end -- (it ended first)
    p.reader = false
  end
end

-- Connects when calls are queued; a failure fails them, as not sent.
local function connect(p)
  local c, err = conn.open(p.client)
  if not c then
    for i = 1, p.nq do
      local e = p.queue[i]
      p.queue[i] = nil
      finish(e, FAILED, err)
    end
    p.nq = 0
    return false
  end
  c.deadline = false
  local client = p.client -- (reads wait longer than an idle pipe lives: see read_replies)
  c.sock:settimeouts(client.connect_ms, client.command_ms,
    (IDLE_S + 2 * WAKE_S) * 1000 + client.command_ms)
  c.timeout_ms = nil -- (not the one conn.open set)
  p.c = c
  p.reader = ngx.thread.spawn(reader, p, c)
  return true
end

-- Sends every queued call (and the latches waiting) in one write.
local function send_queued(p)
  local queue, inflight, n = p.queue, p.inflight, p.nq
  local pieces, k = new_tab(n + 1, 0), 0
  local latches = p.client:take_latches()
  local now = ngx.now()
  if latches then
    local e = entry()
    e.latches, e.n, e.got, e.state, e.abandoned, e.sent_at = latches, 1, 0, SENT, true, now
    k = 1
    pieces[1] = table.concat(resp.encode({}, latches))
    p.tail = p.tail + 1
    inflight[p.tail] = e
  end
  for i = 1, n do
    local e = queue[i]
    queue[i] = nil
    if not e.abandoned then -- (a call that stopped waiting before it was sent: dropped)
      e.state, e.sent, e.sent_at = SENT, true, now
      local bytes = e.bytes
      if type(bytes) == "table" then -- (pieces kept apart: see calls.release)
        for j = 1, #bytes do pieces[k + j] = bytes[j] end
        k = k + #bytes
      else
        k = k + 1
        pieces[k] = bytes
      end
      p.tail = p.tail + 1
      inflight[p.tail] = e
    end
  end
  p.nq = 0
  if k == 0 then return end
  local ok, err = p.c.sock:send(pieces)
  if not ok then
    stop_reader(p)
    give_up(p, err)
  end
end

local function idle(p)
  return p.nq == 0 and p.head > p.tail
end

-- The timer: writes what calls queue until the pipe ends (idle, the worker exiting, the client
-- closed), then gives its connection back to the pool.
local function serve(premature, p)
  local client = p.client
  local command_s = client.command_ms / 1000
  while not premature do
    local due = p.inflight[p.head]
    if p.broken or due and ngx.now() - due.sent_at >= command_s then
      stop_reader(p)
      give_up(p, p.broken or "timeout")
    end
    if p.nq > 0 then
      if p.c or connect(p) then send_queued(p) end
    else
      if idle(p) and (client.shut or ngx.worker.exiting()
          or ngx.now() - p.last_call >= IDLE_S) then
        break
      end
      p.wake:wait(p.head <= p.tail and math.min(WAKE_S, command_s) or WAKE_S)
    end
  end
  -- (no yield from here to the end: a call made meanwhile would find the pipe running)
  p.running = false
  running = running - 1
  stop_reader(p)
  local c = p.c
  p.c = false
  if c then
    if idle(p) and not p.broken then c:done() else c.sock:close() end
  end
  if not idle(p) then give_up(p, "the pipe ended") end
  for i = 1, p.nq do
    local e = p.queue[i]
    p.queue[i] = nil
    finish(e, FAILED, "connection: the worker is exiting")
  end
  p.nq = 0
end

function pipe.serve(premature, p)
  local ok, err = pcall(serve, premature, p)
  if not ok then
    ngx.log(ngx.ERR, "redlease: the connection shared by this worker's calls failed: ", err)
    if p.running then
      p.running = false
      running = running - 1
    end
    stop_reader(p)
    give_up(p, "failed")
  end
end

-- Sends the encoded commands (one string, or a list of pieces), reads n replies,
-- within timeout_ms (else the client's timeouts). -> replies | nil, err, sent (whether the
-- commands went out: with nil, Redis may have run them).
function Pipe:exchange(parts, n, timeout_ms)
  local e = entry()
  e.bytes, e.n, e.got, e.replies, e.state, e.abandoned, e.sent = parts, n, 0, new_tab(n, 0),
    QUEUED, false, false
  local nq = self.nq + 1
  self.nq = nq
  self.queue[nq] = e
  if nq == 1 then self.wake:post(1) end
  local client = self.client
  local wait_ms = self.c and client.command_ms or client.connect_ms + client.command_ms
  if timeout_ms and timeout_ms < wait_ms then wait_ms = timeout_ms end
  self.last_call = ngx.now()
  e.sema:wait(wait_ms / 1000)
  local state = e.state
  if state == DONE then
    local replies = e.replies
    recycle(e)
    return replies
  end
  if state == FAILED then
    local err, sent = e.err, e.sent
    recycle(e)
    return nil, err, sent
  end
  e.abandoned = true -- (the reader drops its answer; the writer, if it was not sent, the call)
  return nil, ("connection: no answer from %s: timeout"):format(where(self)), state == SENT
end

return pipe
