-- Misuse raises an error that names the argument, at the caller's line.
local redlease = require "redlease"
local helper = require "helper"

local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "did not raise")
  assert.matches(pattern, err)
  return err
end

-- connect answers every failure (docs/lua.md): nil and "argument: bad argument ...", never raised.
local function answers(pattern, f, ...)
  local ok, client, err = pcall(f, ...)
  assert.is_true(ok, "raised: " .. tostring(client))
  assert.is_nil(client)
  assert.matches("^argument: bad argument " .. pattern, err)
  return err
end

describe("misuse", function()
  local fx = helper.fixture(before_each, after_each)

  it("connect: a url that is not a string of a known scheme is an answer, not raised", function()
    answers("'url' to 'connect' %(string expected, got nil%)$", redlease.connect)
    answers("'url' to 'connect' %(URL must start with redis://.*%(got http://%)%)$",
      redlease.connect, "http://x")
    answers("'url' to 'connect' %(.*port", redlease.connect, "redis://h:99999")
    answers("'on_lost' to 'connect' %(function expected, got string%)$", redlease.connect,
      "redis://127.0.0.1", { on_lost = "print" })
    -- what the docs show: the error goes to the caller's own handling
    local client, err = redlease.connect("http://x")
    assert.is_nil(client)
    assert.matches("^argument: ", err)
  end)

  it("connect: no password in any message, nor in tostring(client)", function()
    local refused = { "http://u:S3CRET@127.0.0.1", "S3CRET", "redis://u:S3CRET@127.0.0.1:notaport",
      "redis://u:S3C%zzRET@127.0.0.1", "redis://u:S3CRET@" }
    for _, url in ipairs(refused) do
      local ok, client, err = pcall(redlease.connect, url)
      local message = ok and err or client
      assert.is_truthy(not ok or client == nil, url .. " was accepted")
      assert.is_string(message)
      assert.is_nil(message:find("S3C", 1, true), message)
    end
    local url = ("redis://u:p@S3CRET@127.0.0.1:%d/0"):format(fx.server.port)
    local client = assert(redlease.connect(url, { connect_timeout = 0.2, command_timeout = 0.2 }))
    local shown = tostring(client)
    assert.matches("redis://u:***@127.0.0.1:" .. fx.server.port .. "/0", shown, 1, true)
    assert.is_nil(shown:find("S3C", 1, true))
    local guard, err = client:lock("x"):acquire({ timeout = 0 }) -- AUTH refused: no such user
    assert.is_nil(guard)
    assert.is_nil(err:find("S3C", 1, true), err)
    client:close()
  end)

  it("connect: options are known durations in seconds", function()
    local url = fx.server.url
    answers("'options' to 'connect' %(table expected, got string", redlease.connect, url, "x")
    answers("'watchdog_timeout' to 'connect' %(number of seconds expected, got string",
      redlease.connect, url, { watchdog_timeout = "30" })
    answers("'watchdog_timeout' to 'connect' %(positive",
      redlease.connect, url, { watchdog_timeout = 0 })
    answers("'watchdog_timeout' to 'connect' %(at least 0.003",
      redlease.connect, url, { watchdog_timeout = 0.001 })
    answers("'command_timeout' to 'connect' %(positive",
      redlease.connect, url, { command_timeout = -1 })
    answers("'connect_timeout' to 'connect' %(number of seconds expected, got nan",
      redlease.connect, url, { connect_timeout = 0 / 0 })
    answers("'lease' to 'connect' %(unknown option%)", redlease.connect, url, { lease = 1 })
    answers("'handover_grace' to 'connect' %(non%-negative",
      redlease.connect, url, { handover_grace = -0.001 })
    -- beyond 1 s, refused by the core: the value reached it
    answers("'handover_grace' to 'connect' %(handover_grace must be from 0 to 1000 ms",
      redlease.connect, url, { handover_grace = 2 })
    assert.is_truthy(redlease.connect(url, { handover_grace = 0 }))
    answers("'failover_grace' to 'connect' %(failover_grace must be from 0 to 60000 ms",
      redlease.connect, url, { failover_grace = 61 })
    local c = assert(redlease.connect(url, { failover_grace = 0 }))
    assert.equal(0, c:stats().master_changes) -- one Redis: no master is ever followed
  end)

  it("connect: an option the core refuses is the one named", function()
    local url = fx.server.url
    answers("'watchdog_timeout' to 'connect' %(watchdog_timeout must be from 3 ms",
      redlease.connect, url, { watchdog_timeout = 2 ^ 41 / 1000 })
    answers("'sync_timeout' to 'connect' %(sync_timeout must be shorter",
      redlease.connect, url, { sync_replicas = 1, sync_timeout = 40, watchdog_timeout = 30 })
  end)

  it("lock: the name is a non-empty string", function()
    local client = fx.connect()
    raises("bad argument 'name' to 'lock' %(string expected, got number%)", client.lock, client, 42)
    raises("bad argument 'name' to 'lock' %(must not be empty%)", client.lock, client, "")
  end)

  it("acquire and with: timeout >= 0 (math.huge: forever), lease > 0 and finite", function()
    local lock = fx.connect():lock("job")
    raises("'timeout' to 'acquire' %(non%-negative", lock.acquire, lock, { timeout = -1 })
    raises("'timeout' to 'acquire' %(number of seconds expected, got string",
      lock.acquire, lock, { timeout = "1" })
    raises("'lease' to 'acquire' %(positive", lock.acquire, lock, { lease = 0 })
    raises("'lease' to 'acquire' %(positive", lock.acquire, lock, { lease = math.huge })
    raises("'wait' to 'acquire' %(unknown option%)", lock.acquire, lock, { wait = 1 })
    raises("'options' to 'acquire' %(table expected, got number", lock.acquire, lock, 5)
    raises("'fn' to 'with' %(function expected, got nil%)", lock.with, lock)
    raises("'lease' to 'with' %(positive", lock.with, lock, function() end, { lease = -2 })
    assert.equal(0, fx.raw("EXISTS", "job"))
    local g = assert(lock:acquire({ timeout = math.huge, lease = 5 }))
    assert.is_true(g:release())
    assert(lock:acquire({ lease = 0.0001 })) -- rounded up to 1 ms, not refused as 0
  end)

  it("points at the caller's line", function()
    local lock = fx.connect():lock("job")
    raises("^[^:]*args_spec%.lua:%d+: bad argument", function() lock:acquire({ timeout = -1 }) end)
    local sem = fx.connect():semaphore("s")
    raises("^[^:]*args_spec%.lua:%d+: bad argument", function() sem:acquire({ permits = -1 }) end)
    raises("^[^:]*args_spec%.lua:%d+: bad argument", function() lock:extend(1, 5) end)
  end)
end)
