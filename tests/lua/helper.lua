-- Test helpers: a throwaway redis-server per test on a free loopback port, a raw Redis client
-- (RESP over bash's /dev/tcp, binary safe) to look at what redlease wrote, clocks, and Lua
-- subprocesses run under the same interpreter as the suite.
local system = require "system"

local helper = {}

helper.sleep = system.sleep
helper.now = system.monotime
helper.lua = os.getenv("REDLEASE_LUA") or "lua5.4" -- the interpreter running this suite
helper.has_close = _VERSION == "Lua 5.4" -- `<close>` variables
helper.interpreter = rawget(_G, "jit") and jit.version or _VERSION

local function sh(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("*a")
  p:close()
  return out
end
helper.sh = sh

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end
helper.quote = quote

local function alive(pid)
  return sh("kill -0 " .. pid .. " 2>/dev/null && echo yes") == "yes\n"
end

-- Starts redis-server on a random free loopback port (another one if it is taken). It runs
-- under `timeout`, so that a crashed run leaves nothing behind for long; `pid` is the server's
-- own (from INFO), for kill -9. `extra`: more command-line arguments, where "%port2" stands for
-- a second random port (server.port2), e.g. a TLS port.
-- A port to try for a new server (its own spec replaces it to draw a taken one).
function helper.draw_port()
  return math.random(20000, 60000)
end

function helper.start_server(extra)
  local dir = sh("mktemp -d /tmp/rllua.XXXXXX"):gsub("%s+$", "")
  math.randomseed(os.time() + math.floor(helper.now() * 1e6) % 1000003)
  for _ = 1, 20 do
    local port, port2 = helper.draw_port(), helper.draw_port()
    local more = (extra or ""):gsub("%%port2", tostring(port2))
    local wrapper = sh(("timeout 300 redis-server --port %d --bind 127.0.0.1 --save '' " ..
      "--appendonly no --dir %s --logfile %s/redis.log %s >/dev/null 2>&1 </dev/null & echo $!")
      :format(port, dir, dir, more)):match("%d+")
    for _ = 1, 100 do
      local info = sh(("redis-cli -p %d info server 2>/dev/null"):format(port))
      local pid = info:match("process_id:(%d+)")
      -- Ours only if it works in our folder: a server someone else started on that port (the
      -- random port was taken) is never used, and never killed.
      local ours = pid and sh(("redis-cli -p %d config get dir 2>/dev/null"):format(port))
        :find(dir, 1, true)
      if ours then
        return { port = port, port2 = port2, pid = pid, dir = dir,
                 url = "redis://127.0.0.1:" .. port }
      end
      if pid or not alive(wrapper) then break end -- the port was taken
      helper.sleep(0.02)
    end
    sh("kill -9 " .. wrapper .. " 2>/dev/null")
  end
  error("cannot start redis-server (is it installed?)")
end

-- Kills the server at once (SIGKILL: no goodbye to the clients) and waits until it is gone.
function helper.kill_server(server)
  if server.pid then
    sh(("kill -9 %s 2>/dev/null; while kill -0 %s 2>/dev/null; do sleep 0.01; done")
      :format(server.pid, server.pid))
    server.pid = nil
  end
end

function helper.stop_server(server)
  helper.kill_server(server)
  sh("rm -rf " .. quote(server.dir))
end

local function encode(argv)
  local parts = { "*" .. #argv .. "\r\n" }
  for _, a in ipairs(argv) do
    a = tostring(a)
    parts[#parts + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
  end
  return table.concat(parts)
end

-- Parses one RESP2 reply at pos; returns value and the next position. Errors become
-- {err = "..."}; a nil bulk string or array is nil.
local function parse(s, pos)
  local kind, line, after = s:sub(pos, pos), s:match("^(.-)\r\n()", pos + 1)
  if kind == "+" then return line, after end
  if kind == "-" then return { err = line }, after end
  if kind == ":" then return tonumber(line), after end
  if kind == "$" then
    local n = tonumber(line)
    if n < 0 then return nil, after end
    return s:sub(after, after + n - 1), after + n + 2
  end
  if kind == "*" then
    local n, out = tonumber(line), {}
    if n < 0 then return nil, after end
    for i = 1, n do out[i], after = parse(s, after) end
    return out, after
  end
  error("cannot parse the reply: " .. s)
end

-- One command on a fresh raw connection: raw(server, "HGETALL", name).
function helper.raw(server, ...)
  local file = os.tmpname()
  local f = assert(io.open(file, "wb"))
  f:write(encode({ ... }), encode({ "QUIT" }))
  f:close()
  local out = sh(("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat %s >&3 && cat <&3' 2>&1")
    :format(server.port, quote(file)))
  os.remove(file)
  return (parse(out, 1))
end

-- HGETALL as a table field -> value.
function helper.hash(server, key)
  local flat, out = helper.raw(server, "HGETALL", key), {}
  for i = 1, #flat, 2 do out[flat[i]] = flat[i + 1] end
  return out
end

function helper.count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

-- Runs Lua source in a new process of this suite's interpreter (same package paths);
-- returns exit code, stdout, stderr and the seconds it took.
function helper.run_lua(source, env)
  local script, out, err = os.tmpname(), os.tmpname(), os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(source)
  f:close()
  local vars = {}
  for k, v in pairs(env or {}) do vars[#vars + 1] = k .. "=" .. quote(v) end
  local t0 = helper.now()
  local code = tonumber(sh(("%s timeout 60 %s %s >%s 2>%s </dev/null; echo $?")
    :format(table.concat(vars, " "), helper.lua, script, out, err)))
  local took = helper.now() - t0
  local function slurp(name)
    local h = io.open(name, "rb")
    local s = h:read("*a")
    h:close()
    os.remove(name)
    return s
  end
  os.remove(script)
  return code, slurp(out), slurp(err), took
end

-- Starts a shell command in the background; returns its pid.
function helper.spawn(cmd)
  return sh("(" .. cmd .. ") >/dev/null 2>&1 </dev/null & echo $!"):match("%d+")
end

-- Polls check() every 20 ms for up to `seconds`; returns whether it became true.
function helper.eventually(seconds, check)
  local deadline = helper.now() + seconds
  repeat
    if check() then return true end
    helper.sleep(0.02)
  until helper.now() > deadline
  return check() and true or false
end

-- The unlock channel of a lock name (docs/protocol.md: prefix("redisson_lock__channel", name)).
function helper.channel(name)
  if name:find("{", 1, true) then return "redisson_lock__channel:" .. name end
  return "redisson_lock__channel:{" .. name .. "}"
end

-- The per-test fixture: a fresh server and clients that are closed after the test. Given busted's
-- before_each and after_each, it registers its setup and teardown with them.
function helper.fixture(before_each, after_each)
  local fx = { clients = {} }
  function fx.setup()
    fx.server = helper.start_server()
    fx.clients = {}
  end
  function fx.teardown()
    for _, c in ipairs(fx.clients) do c:close() end
    fx.clients = {}
    helper.stop_server(fx.server)
  end
  -- A client of this test's server; opts in seconds, as redlease.connect takes them.
  function fx.connect(opts)
    local c = assert(require("redlease").connect(fx.server.url, opts))
    fx.clients[#fx.clients + 1] = c
    return c
  end
  function fx.raw(...) return helper.raw(fx.server, ...) end
  function fx.hash(key) return helper.hash(fx.server, key) end
  -- Another owner (not this process) holds `name` for lease_ms, as Redisson would write it.
  function fx.hold_elsewhere(name, lease_ms)
    fx.raw("EVAL",
      "redis.call('hset', KEYS[1], ARGV[1], 1); redis.call('pexpire', KEYS[1], ARGV[2])", 1, name,
      "00000000-0000-0000-0000-000000000000:1", lease_ms)
  end
  -- That owner's release, as Redisson does it: delete, then publish "0" on the lock's channel.
  function fx.release_elsewhere_cmd(name)
    return ("redis-cli -p %d EVAL %s 2 %s %s"):format(fx.server.port,
      helper.quote("redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], '0')"),
      helper.quote(name), helper.quote(helper.channel(name)))
  end
  if before_each then before_each(fx.setup) end
  if after_each then after_each(fx.teardown) end
  return fx
end

return helper
