-- A redlease Lua client driven line by line, for the interop tests (tests/interop/luapeer.py
-- starts it under lua5.4 with the rock tree of `make lua-rocks` on LUA_PATH/LUA_CPATH).
--
--   lua5.4 lua_peer.lua REDIS_URL [WATCHDOG_TIMEOUT_SECONDS]
--
-- Prints `ready <client id>` once connected (or `fatal <error>` and exits 1), then reads one
-- command per line on stdin and answers each with one line on stdout, in order. Everything runs
-- in the main coroutine: it is the owner of every hold, and a blocking acquire blocks the peer
-- until it returns (the test stamps the time it reads the answer).
--
--   acquire HEXNAME [TIMEOUT|- [LEASE|-]]   lock:acquire{timeout=, lease=} (seconds; - : nil)
--   release HEXNAME                         lock:release()
--   locked | held | hold_count | remaining | force_unlock | lost  HEXNAME
--   quit
--
-- HEXNAME is the lock name's bytes in hex. Answers: `ok [value]` or `fail <error string>`
-- (line breaks in it replaced by spaces); `value` is true/false, a number, or `none` for nil.
local redlease = require "redlease"

local function unhex(h)
  assert(#h % 2 == 0, "odd-length hex name")
  return (h:gsub("..", function(b) return string.char(tonumber(b, 16)) end))
end

local function answer(line)
  io.stdout:write(line, "\n")
  io.stdout:flush()
end

local function show(v)
  if v == nil then return "none" end
  return tostring(v)
end

local function seconds(word)
  if word == nil or word == "-" then return nil end
  return assert(tonumber(word), "not a number: " .. word)
end

local url, watchdog = arg[1], tonumber(arg[2])
local client, err = redlease.connect(url, { watchdog_timeout = watchdog })
if client then
  -- Connections open on first use: make one round trip now, so that `ready` means reachable.
  local _, e = client:lock("redlease-interop-peer-probe"):locked()
  if e then client, err = nil, e end
end
if not client then
  answer("fatal " .. tostring(err):gsub("[\r\n]", " "))
  os.exit(1)
end
answer("ready " .. client:id())

local locks, guards = {}, {}
local function lock_of(hex)
  local l = locks[hex]
  if not l then
    l = client:lock(unhex(hex))
    locks[hex] = l
    guards[hex] = {}
  end
  return l
end

local function reply(ok, ...)
  if ok == nil then
    answer("fail " .. tostring((...)):gsub("[\r\n]", " "))
  else
    answer("ok " .. show(ok) .. (select("#", ...) > 0 and (" " .. show((...))) or ""))
  end
end

for line in io.stdin:lines() do
  local words = {}
  for w in line:gmatch("%S+") do words[#words + 1] = w end
  local cmd, hex = words[1], words[2] -- cmd is nil on a blank line, which is ignored
  if cmd == "quit" then
    answer("ok bye")
    break
  elseif cmd ~= nil and hex == nil then
    answer("fail usage: " .. cmd .. " needs a HEXNAME")
  elseif cmd ~= nil then
    local lock = lock_of(hex)
    if cmd == "acquire" then
      local g, e = lock:acquire { timeout = seconds(words[3]), lease = seconds(words[4]) }
      if g then
        table.insert(guards[hex], g)
        answer("ok true")
      else
        reply(nil, e)
      end
    elseif cmd == "release" then
      local ok, e = lock:release()
      if ok then
        table.remove(guards[hex])
        answer("ok true")
      else
        reply(nil, e)
      end
    elseif cmd == "lost" then
      reply(lock:lost())
    elseif cmd == "locked" or cmd == "held" or cmd == "hold_count" or cmd == "remaining"
        or cmd == "force_unlock" then
      local v, e = lock[cmd](lock)
      if v == nil then reply(nil, e) else reply(v) end
    else
      answer("fail unknown command " .. cmd)
    end
  end
end
client:close()
