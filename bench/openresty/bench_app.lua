-- The handlers of the OpenResty benchmark (bench/openresty/run.py): an empty one (the limit),
-- one lock cycle per request with redlease, the same with a polling lock written the usual
-- way (SET NX PX, retried with ngx.sleep, released by a compare-and-delete script), and with
-- redlease's own two scripts sent as the polling lock sends its commands (the bare format: what
-- Redisson's format costs Redis and the worker with no client around the scripts).
local redlease = require "redlease"

local ffi = require "ffi"
ffi.cdef [[
  struct redlease_timespec { long tv_sec; long tv_nsec; };
  int clock_gettime(int clk_id, struct redlease_timespec *tp);
]]
local ts = ffi.new("struct redlease_timespec")

-- Wall-clock seconds with microseconds (ngx.now() has milliseconds only).
local function wall()
  ffi.C.clock_gettime(0, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local app = {}
local client, url
local POLL_STEP = 0.05 -- the polling lock's retry interval (seconds)
local RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then "
  .. "return redis.call('del', KEYS[1]) end return 0"

-- redlease connects to `redis_url` (any URL it takes: redis://, redis+sentinel://,
-- redis+cluster://); the polling lock to `polling_url` (a redis:// URL; default `redis_url`).
function app.init(redis_url, polling_url)
  url = polling_url or redis_url
  client = assert(redlease.connect(redis_url))
end

-- The polling lock: one command per cosocket from the keepalive pool, at `url`.
local function command(...)
  local host, port = url:match("^redis://([^:/]+):(%d+)")
  local sock = ngx.socket.tcp()
  local ok, err = sock:connect(host, tonumber(port))
  if not ok then return nil, err end
  local args = { ... }
  local parts = { "*" .. #args .. "\r\n" }
  for _, a in ipairs(args) do
    a = tostring(a)
    parts[#parts + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
  end
  sock:send(parts)
  local line = sock:receive("*l")
  if line and line:sub(1, 1) == "$" and line ~= "$-1" then
    sock:receive(tonumber(line:sub(2)) + 2)
  end
  sock:setkeepalive(60000, 256)
  return line
end

local serial = 0
local function poll_acquire(name, timeout)
  serial = serial + 1
  local token = ngx.worker.pid() .. ":" .. serial
  local deadline = ngx.now() + timeout
  while true do
    if command("SET", name, token, "NX", "PX", 30000) == "+OK" then return token end
    if ngx.now() >= deadline then return nil end
    ngx.sleep(POLL_STEP)
  end
end

local function poll_release(name, token)
  command("EVAL", RELEASE, 1, name, token)
end

-- Per connection its own name: requests of one connection come one after the other.
local function cycle_name() return "rps:" .. ngx.var.connection end

function app.empty() ngx.say("ok") end

function app.redlease_cycle()
  local g = assert(client:lock(cycle_name()):acquire { timeout = 5, lease = 30 })
  assert(g:release())
  ngx.say("ok")
end

-- The bare format: the acquire and release scripts redlease runs (Redisson's format: a hash with
-- the owner's count, the unlock latch, the publish), by EVALSHA through command(); one try, so
-- only for the uncontended cycle. Its latches are left to expire (redlease deletes its own in
-- batches): the same writes in Redis, one DEL fewer per few requests.
local SCRIPTS = require "redlease.resty.scripts"
local KEYS = require "redlease.resty.keys" -- (the same key, channel and latch names)
local BARE_LEASE_MS, BARE_LATCH_MS = 30000, 10000
local bare_owner -- this worker's UUID and ":"
local bare_sha -- {acquire = sha, release = sha}, once loaded by this worker

-- A script's SHA1, as EVALSHA names it (also bench_mux.lua's).
function app.sha1_hex(text)
  return (ngx.sha1_bin(text):gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

function app.bare_cycle()
  if not bare_sha then -- (requests that start meanwhile load them too: SCRIPT LOAD is idempotent)
    local shas = {}
    for _, which in ipairs { "acquire", "release" } do
      assert(command("SCRIPT", "LOAD", SCRIPTS[which]))
      shas[which] = app.sha1_hex(SCRIPTS[which])
    end
    bare_owner = bare_owner or require("redlease.resty.owner").uuid() .. ":"
    bare_sha = shas
  end
  local k = KEYS.of("lock", cycle_name())
  serial = serial + 1
  local owner = bare_owner .. serial -- (a field as long as redlease's: a UUID and a number)
  assert(command("EVALSHA", bare_sha.acquire, 1, k.name, BARE_LEASE_MS, owner) == "$-1")
  assert(command("EVALSHA", bare_sha.release, 3, k.name, k.channel, k.latch_prefix .. owner,
    "0", BARE_LEASE_MS, owner, BARE_LATCH_MS, "publish") == ":1")
  ngx.say("ok")
end

function app.polling_cycle()
  local name = cycle_name()
  local token = assert(poll_acquire(name, 5))
  poll_release(name, token)
  ngx.say("ok")
end

-- /handoff?impl=&name=&secs=: acquire (waiting), hold `secs`, release; prints got and left.
function app.handoff()
  local impl, name, secs = ngx.var.arg_impl, ngx.var.arg_name, tonumber(ngx.var.arg_secs or 0)
  local release
  if impl == "redlease" then
    local g = assert(client:lock(name):acquire { timeout = 10, lease = 30 })
    release = function() assert(g:release()) end
  else
    local token = assert(poll_acquire(name, 10))
    release = function() poll_release(name, token) end
  end
  local got = wall()
  if secs > 0 then ngx.sleep(secs) end
  local left = wall()
  release()
  ngx.say(("got=%.6f\nleft=%.6f"):format(got, left))
end

return app
