-- When Redis is away: errors come back as nil, "connection: ..." (never a crash, never SIGPIPE),
-- and a closed client answers "closed".
local helper = require "helper"

describe("failures", function()
  local fx = helper.fixture()
  before_each(fx.setup)
  after_each(fx.teardown)

  it("a server that is not there: connect succeeds (lazy), calls answer \"connection\"", function()
    local port = fx.server.port
    helper.kill_server(fx.server)
    local client = assert(require("redlease").connect("redis://127.0.0.1:" .. port,
      { connect_timeout = 0.5, command_timeout = 0.5 }))
    fx.clients[#fx.clients + 1] = client
    local lock = client:lock("job")
    for _, call in ipairs({ "acquire", "locked", "held", "hold_count", "remaining", "force_unlock" }) do
      local v, err = lock[call](lock)
      assert.is_nil(v, call)
      assert.matches("^connection: ", err)
    end
    local ok, err = pcall(lock.with, lock, function() end)
    assert.is_false(ok)
    assert.matches("^connection: ", err)
  end)

  it("a server killed in the middle of a call: nil, \"connection: ...\"", function()
    local lock = fx.connect({ connect_timeout = 0.5, command_timeout = 5 }):lock("job")
    assert.is_false(lock:locked()) -- connected
    -- a script that keeps the server busy for 3 s: the next command waits for it
    helper.spawn(("redis-cli -p %d EVAL %s 0"):format(fx.server.port, helper.quote(
      "local s = redis.call('TIME') while true do local n = redis.call('TIME') " ..
      "if (n[1] - s[1]) * 1000000 + n[2] - s[2] > 3000000 then break end end")))
    helper.sleep(0.2)
    helper.spawn("sleep 0.5; kill -9 " .. fx.server.pid)
    local t0 = helper.now()
    local v, err = lock:locked()
    local took = helper.now() - t0
    fx.server.pid = nil
    assert.is_nil(v)
    assert.matches("^connection: ", err)
    assert.is_true(took >= 0.3 and took < 4.5, "took " .. took) -- ended by the kill
  end)

  it("a server killed while a waiter waits: the wait ends with \"connection\"", function()
    local lock = fx.connect({ connect_timeout = 0.3, command_timeout = 0.3 }):lock("job")
    fx.hold_elsewhere("job", 60000)
    helper.spawn("sleep 0.5; kill -9 " .. fx.server.pid)
    local t0 = helper.now()
    local g, err = lock:acquire({ timeout = 20 })
    local took = helper.now() - t0
    fx.server.pid = nil
    assert.is_nil(g)
    assert.matches("^connection: ", err)
    assert.is_true(took < 10, "took " .. took)
  end)

  it("writing to a dead server does not kill the interpreter (SIGPIPE)", function()
    local code, out, err = helper.run_lua(([[
      local client = assert(require("redlease").connect(%q, { connect_timeout = 0.5, command_timeout = 0.5 }))
      local lock = client:lock("job")
      local guard = assert(lock:acquire())
      os.execute("kill -9 %s; while kill -0 %s 2>/dev/null; do sleep 0.01; done")
      for i = 1, 20 do
        local ok, e = lock:acquire({ timeout = 0 })
        io.write(tostring(e):match("^%%w+"), " ")
        ok, e = guard:release()
        io.write(tostring(e):match("^%%w+"), " ")
      end
      print("survived")
    ]]):format(fx.server.url, fx.server.pid, fx.server.pid))
    fx.server.pid = nil
    assert.equal(0, code, err)
    assert.matches("connection", out)
    assert.matches("survived\n$", out)
  end)

  it("a closed client answers \"closed\" and cannot make locks", function()
    local client = fx.connect()
    local lock = client:lock("job")
    local guard = assert(lock:acquire())
    client:close()
    client:close()
    assert.is_true(client:closed())
    local g, err = lock:acquire()
    assert.is_nil(g)
    assert.matches("^closed: ", err)
    assert.matches("^closed: ", select(2, lock:locked()))
    assert.matches("^closed: ", select(2, guard:release()))
    assert.is_true(guard:released())
    local ok, raised = pcall(client.lock, client, "other")
    assert.is_false(ok)
    assert.matches("closed", raised)
    -- not released: the hold expires by its lease
    assert.equal(1, fx.raw("EXISTS", "job"))
  end)
end)
