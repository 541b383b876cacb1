-- Being told of a loss when it happens: on_lost and on_state hooks per client, and the logger
-- the rock writes to (redlease.logger). The core's threads never call into Lua: the events wait
-- until the program calls into the client (any method, before it runs and after it returns) or
-- calls client:dispatch().
local redlease = require "redlease"
local helper = require "helper"

describe("events", function()
  local fx = helper.fixture(before_each, after_each)
  local records, saved

  before_each(function()
    records, saved = {}, redlease.logger
    redlease.logger = function(level, message) records[#records + 1] = level .. " " .. message end
  end)
  after_each(function() redlease.logger = saved end)

  local function logged(pattern)
    for _, r in ipairs(records) do
      if r:find(pattern) then return r end
    end
  end

  it("on_lost hears of a loss at the next call, never from the watchdog's thread", function()
    local calls = {}
    local client = fx.connect({ watchdog_timeout = 0.6,
      on_lost = function(...) calls[#calls + 1] = { ... } end,
      on_state = function(...) calls[#calls + 1] = { "state", ... } end })
    local lock = client:lock("job")
    local guard = assert(lock:acquire())
    fx.raw("DEL", "job")
    helper.sleep(1) -- the watchdog finds it within a renewal period (0.2 s)
    assert.same({}, calls) -- no call into the library yet: nothing was delivered
    assert.equal(2, client:dispatch()) -- the loss, and the renewal round that found it
    assert.same({ { "job", "deleted" }, { "state", "job", "lost", "deleted" } }, calls)
    assert.equal('error lock "job" lost while held: deleted', logged("lost while held"))
    assert.equal(0, client:dispatch()) -- once
    assert.matches("^lost: ", select(2, guard:release()))
    assert.equal(2, #calls)
  end)

  it("any call into the client or its objects delivers them first", function()
    local lost = {}
    local client = fx.connect({ watchdog_timeout = 0.6,
      on_lost = function(name, reason) lost[#lost + 1] = name .. ":" .. reason end })
    local lock = client:lock("job")
    assert(lock:acquire())
    local other = client:semaphore("other")
    fx.raw("DEL", "job")
    helper.sleep(1)
    assert.same({}, lost)
    other:available_permits() -- another object of the same client
    assert.same({ "job:deleted" }, lost)
    -- during a call: a loss found while a wait goes on is told when it returns
    assert.matches("^lost: ", select(2, lock:release()))
    assert(lock:acquire())
    fx.raw("DEL", "job")
    fx.hold_elsewhere("busy", 30000)
    local _, err = client:lock("busy"):acquire({ timeout = 1 })
    assert.matches("^timeout: ", err)
    assert.same({ "job:deleted", "job:deleted" }, lost)
  end)

  it("a hook that raises is logged and the call goes on", function()
    local client = fx.connect({ watchdog_timeout = 0.6, on_lost = function() error("boom") end })
    local lock = client:lock("job")
    assert(lock:acquire())
    fx.raw("DEL", "job")
    helper.sleep(1)
    assert.is_true(lock:lost()) -- delivered here; the hook's error is not this call's
    assert.matches('^error on_lost callback raised for lock "job": .*boom',
      logged("callback raised"))
  end)

  it("renewal trouble: in doubt at the next call once the renewal is half a period late "
    .. "(stuck round or not), then held; the logger warns", function()
    local states = {}
    local client = fx.connect({ watchdog_timeout = 3, command_timeout = 1,
      on_state = function(name, state, why) states[#states + 1] = { name, state, why } end })
    local lock = client:lock("doubt")
    assert(lock:acquire())
    -- a 3 s lease renewed every second, each call cut at 1 s: with the server stopped, the round
    -- sent at 1 s fails at 2 s, but from 1.5 s the renewal is half a period late, which the clock
    -- alone tells; the round after the failed one goes through once the server is back
    helper.sh("kill -STOP " .. fx.server.pid)
    local doubted = helper.eventually(2.6, function()
      client:dispatch()
      return states[1] ~= nil
    end)
    local retried = helper.eventually(2, function()
      client:dispatch()
      return logged("will retry") ~= nil
    end)
    helper.sh("kill -CONT " .. fx.server.pid)
    assert.is_true(doubted and retried, table.concat(records, "|"))
    assert.is_true(helper.eventually(3, function()
      client:dispatch()
      return states[2] ~= nil
    end), table.concat(records, "|"))
    assert.same({ "doubt", "in_doubt" }, { states[1][1], states[1][2] })
    assert.matches("its renewal is late", states[1][3])
    assert.same({ "doubt", "held" }, { states[2][1], states[2][2] })
    assert.equal(2, #states)
    assert.matches("^warning renewal failed, will retry: ", logged("will retry"))
    assert.matches([[^warning lock "doubt" in doubt]], logged("in doubt"))
    assert.is_true(lock:release())
  end)

  it("the default logger writes warnings and errors to stderr; false silences it", function()
    local source = ([[
      local redlease = require "redlease"
      local client = assert(redlease.connect(%q, { watchdog_timeout = 0.6 }))
      local lock = client:lock("job")
      assert(lock:acquire())
      os.execute("redis-cli -p %d DEL job >/dev/null")
      local t = os.time() + 5
      repeat until lock:lost() or os.time() > t
      io.stdout:write("lost\n")
      local quiet = client:lock("quiet")
      assert(quiet:acquire())
      os.execute("redis-cli -p %d DEL quiet >/dev/null")
      redlease.logger = false
      t = os.time() + 5
      repeat until quiet:lost() or os.time() > t
      client:close()
    ]]):format(fx.server.url, fx.server.port, fx.server.port)
    local code, out, err = helper.run_lua(source)
    assert.equal(0, code, err)
    assert.equal("lost\n", out)
    assert.matches('redlease: %[error%] lock "job" lost while held: deleted\n', err)
    assert.is_nil(err:find("quiet", 1, true), err)
    assert.is_nil(err:find("renewed", 1, true), err) -- debug records stay out
  end)

  it("a hold the collector released for a collected coroutine is logged", function()
    local client = fx.connect()
    local lock = client:lock("job")
    local co = coroutine.create(function() assert(lock:acquire()) end)
    assert.is_true((coroutine.resume(co)))
    co = nil -- luacheck: ignore
    assert.is_true(helper.eventually(5, function()
      collectgarbage()
      return fx.raw("EXISTS", "job") == 0
    end))
    client:dispatch()
    assert.matches('^warning lock "job": its coroutine %(context %d+%) was collected while ' ..
      "holding it; released$", logged("collected"))
  end)

  it("connect refuses hooks that are not functions", function()
    local client, err = redlease.connect(fx.server.url, { on_state = 42 })
    assert.is_nil(client)
    assert.equal("argument: bad argument 'on_state' to 'connect' (function expected, got number)",
      err)
  end)
end)
