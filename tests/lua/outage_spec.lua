-- Network faults between a holder and Redis, injected by tests/faults/proxy.py (run as a
-- process, driven through its stdin): what survives, and how a loss is reported in Lua.
local helper = require "helper"

local PROXY = "../faults/proxy.py" -- busted runs in tests/lua

-- Starts the proxy in front of `server`; returns {url, send(command)}.
local function start_proxy(server)
  local out = os.tmpname()
  local stdin = assert(io.popen(("exec python3 %s %d >%s"):format(PROXY, server.port, out), "w"))
  local proxy, answered = { out = out, stdin = stdin }, 0
  local function lines()
    local f = io.open(out)
    local text = f and f:read("*a") or ""
    if f then f:close() end
    return text
  end
  assert(helper.eventually(5, function() return lines():match("^port %d+") ~= nil end))
  proxy.url = "redis://127.0.0.1:" .. lines():match("^port (%d+)")
  function proxy.send(command)
    stdin:write(command, "\n")
    stdin:flush()
    answered = answered + 1
    assert(helper.eventually(5, function()
      local _, oks = lines():gsub("\nok", "")
      return oks >= answered
    end), "the proxy did not answer " .. command)
  end
  function proxy.stop()
    stdin:close()
    os.remove(out)
  end
  return proxy
end

describe("outages", function()
  local fx = helper.fixture()
  local proxy
  before_each(function()
    fx.setup()
    proxy = start_proxy(fx.server)
  end)
  after_each(function()
    for _, c in ipairs(fx.clients) do c:close() end
    fx.clients = {}
    proxy.stop()
    fx.teardown()
  end)

  local function connect()
    local c = assert(require("redlease").connect(proxy.url, {
      watchdog_timeout = 0.9, connect_timeout = 0.2, command_timeout = 0.2 }))
    fx.clients[#fx.clients + 1] = c
    return c
  end

  it("an outage shorter than the lease is survived silently", function()
    local lock = connect():lock("survives")
    assert(lock:acquire())
    helper.sleep(0.35) -- a renewal went through: a whole lease confirmed
    proxy.send("refuse")
    helper.sleep(0.35)
    proxy.send("pass")
    helper.sleep(1.3) -- more than a lease: only renewals kept it
    assert.is_false(lock:lost())
    assert.is_true(fx.raw("PTTL", "survives") > 0)
    assert.is_true(lock:release())
  end)

  it("an outage longer than the lease: lost as unreachable, release answers lost", function()
    local lock = connect():lock("outage")
    assert(lock:acquire())
    local t0 = helper.now()
    proxy.send("blackhole")
    assert.is_true(helper.eventually(4, function() return lock:lost() end))
    local took = helper.now() - t0
    assert.is_true(took >= 0.5 and took <= 0.9 + 0.3 + 0.5, "reported after " .. took .. " s")
    assert.same({ true, "unreachable" }, { lock:lost() })
    local ok, err = lock:release()
    assert.is_nil(ok)
    assert.matches("^lost: .*unreachable", err)
    proxy.send("pass")
  end)

  it("a release during an outage answers connection, and its retry counts once", function()
    local lock = connect():lock("twice")
    local warm = connect():lock("warm")
    assert(warm:acquire()); assert(warm:release()) -- scripts loaded before the fault
    local g1 = assert(lock:acquire())
    local g2 = assert(lock:acquire())
    proxy.send("mute") -- the release reaches Redis, its answer does not
    local ok, err = g2:release()
    assert.is_nil(ok)
    assert.matches("^connection: ", err)
    proxy.send("pass")
    proxy.send("cut")
    assert.is_true(g2:release()) -- the same release, retried: applied once
    assert.equal("1", select(2, next(fx.hash("twice"))))
    assert.is_true(g1:release())
    assert.equal(0, fx.raw("EXISTS", "twice"))
  end)
end)
