-- An experiment beside the benchmark's handlers (bench/openresty/per_request.py --mux): the bare
-- format's cycle with every request of a worker sharing one pipelined connection, served by a
-- timer. A request queues its command and waits on a semaphore of its own; the timer sends all
-- that is queued in one write and hands each reply to its request in order. What Redis and the
-- worker would save if the backend multiplexed its calls instead of a cosocket per call.
local semaphore = require "ngx.semaphore"
local SCRIPTS = require "redlease.resty.scripts"
local KEYS = require "redlease.resty.keys"

local mux = {}
local url, queue, wake, started = nil, {}, semaphore.new(), false
local LEASE_MS, LATCH_MS = 30000, 10000
local sha, owner_prefix, serial = {}, nil, 0

local resp = require "redlease.resty.resp"

local function encode(args) return table.concat(resp.encode({}, args)) end

local sha1_hex = require("bench_app").sha1_hex

-- The timer: one connection; each turn sends every queued command at once, then reads as many
-- one-line replies (all the bare format's replies are one line) and wakes each request.
local function serve(premature)
  if premature then return end
  local host, port = url:match("^redis://([^:/]+):(%d+)")
  local sock = ngx.socket.tcp()
  sock:settimeouts(1000, 5000, 5000)
  assert(sock:connect(host, tonumber(port)))
  for _, which in ipairs { "acquire", "release" } do
    sock:send(encode { "SCRIPT", "LOAD", SCRIPTS[which] })
    sock:receive("*l")
    sock:receive("*l")
    sha[which] = sha1_hex(SCRIPTS[which])
  end
  while not ngx.worker.exiting() do
    if #queue == 0 then wake:wait(1) end
    local batch = queue
    if #batch > 0 then
      queue = {}
      local bytes = {}
      for i = 1, #batch do bytes[i] = batch[i].bytes end
      assert(sock:send(bytes))
      for i = 1, #batch do
        batch[i].reply = assert(sock:receive("*l"))
        batch[i].sema:post(1)
      end
    end
  end
end

function mux.init(redis_url)
  url = redis_url
  owner_prefix = require("redlease.resty.owner").uuid() .. ":"
end

local function call(ctx, bytes)
  ctx.bytes, ctx.reply = bytes, nil
  queue[#queue + 1] = ctx
  if #queue == 1 then wake:post(1) end
  assert(ctx.sema:wait(5))
  return ctx.reply
end

function mux.cycle(name)
  local ctx = { sema = semaphore.new() }
  if not started then
    started = true
    assert(ngx.timer.at(0, serve))
  end
  while not sha.release do ngx.sleep(0.01) end
  local k = KEYS.of("lock", name)
  serial = serial + 1
  local owner = owner_prefix .. serial
  assert(call(ctx, encode { "EVALSHA", sha.acquire, 1, k.name, LEASE_MS, owner }) == "$-1")
  assert(call(ctx, encode { "EVALSHA", sha.release, 3, k.name, k.channel,
    k.latch_prefix .. owner, "0", LEASE_MS, owner, LATCH_MS, "publish" }) == ":1")
  ngx.say("ok")
end

return mux
