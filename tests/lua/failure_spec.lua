-- When Redis is away: errors come back as nil, "connection: ..." (never a crash, never SIGPIPE),
-- and a closed client answers "closed".
local helper = require "helper"

describe("failures", function()
  local fx = helper.fixture(before_each, after_each)

  it("a server that is not there: connect succeeds (lazy), calls answer \"connection\"", function()
    local port = fx.server.port
    helper.kill_server(fx.server)
    local client = assert(require("redlease").connect("redis://127.0.0.1:" .. port,
      { connect_timeout = 0.5, command_timeout = 0.5 }))
    fx.clients[#fx.clients + 1] = client
    local lock = client:lock("job")
    local calls = { "acquire", "locked", "held", "hold_count", "remaining", "force_unlock" }
    for _, call in ipairs(calls) do
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

  it("a server killed between calls: each later call answers \"connection\"", function()
    local code, out, err = helper.run_lua(([[
      local client = assert(require("redlease").connect(%q,
        { connect_timeout = 0.5, command_timeout = 0.5 }))
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

  it("a peer hanging up in the middle of a write does not kill the interpreter (SIGPIPE)",
    function()
    -- A fake server that hangs up (FIN, then RST) while a command far larger than the socket
    -- buffers is being written: the rest of the write meets EPIPE, which raises SIGPIPE, fatal
    -- by default in lua5.4 and luajit.
    local portfile = os.tmpname()
    local fake = helper.spawn(("exec timeout 60 python3 -c %s > %s"):format(helper.quote([[
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); time.sleep(0.05); c.shutdown(socket.SHUT_WR); time.sleep(0.05); c.close()
]]), portfile))
    local port
    assert.is_true(helper.eventually(5, function()
      local f = io.open(portfile)
      port = f and f:read("*l")
      if f then f:close() end
      return port and port:match("^%d+$")
    end))
    os.remove(portfile)
    local code, out, err = helper.run_lua(([[
      local client = assert(require("redlease").connect("redis://127.0.0.1:%s",
        { connect_timeout = 1, command_timeout = 1 }))
      local lock = client:lock(string.rep("x", 64000000))
      for i = 1, 3 do io.write(select(2, lock:locked()), "\n") end -- EXISTS <64 MB name>
      print("survived")
    ]]):format(port))
    helper.sh("kill " .. fake .. " 2>/dev/null")
    assert.equal(0, code, err)
    assert.matches("^connection: [^\n]*Broken pipe\n", out) -- EPIPE was met
    assert.matches("survived\n$", out)
  end)

  it("Redis refusing a call (the name holds a string): nil, \"server: ...\"", function()
    local lock = fx.connect():lock("job")
    fx.raw("SET", "job", "not a lock")
    local g, err = lock:acquire({ timeout = 0 })
    assert.is_nil(g)
    assert.matches('^server: "job" holds a value of another type %(string%); redlease needs it for '
      .. "a lock %(WRONGTYPE%)", err)
    assert.equal("not a lock", fx.raw("GET", "job"))
  end)

  it("rediss:// needs a build with TLS; without, nil, \"unsupported: ...\"", function()
    local client, err = require("redlease").connect("rediss://127.0.0.1:" .. fx.server.port)
    if require("redlease").tls_supported then
      assert.is_not_nil(client, err) -- connects nothing yet
      client:close()
    else
      assert.is_nil(client)
      assert.matches("^unsupported: ", err)
    end
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
