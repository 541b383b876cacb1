-- The rest of Redisson's lock family from Lua: semaphores, permit-expirable semaphores,
-- count-down latches and multi-locks; waits, timeouts and bad input for each.
local helper = require "helper"

-- A shell command that runs Lua `script` on the test's server after `delay` seconds (another
-- process, as another worker would be).
local function later(fx, delay, script, keys)
  local argv = {}
  for _, k in ipairs(keys) do argv[#argv + 1] = helper.quote(k) end
  return ("sleep %s; redis-cli -p %d EVAL %s %d %s"):format(delay, fx.server.port,
    helper.quote(script), #keys, table.concat(argv, " "))
end

describe("semaphore", function()
  local fx = helper.fixture(before_each, after_each)

  it("keeps Redisson's layout and counts the client's permits", function()
    local sem = fx.connect():semaphore("exports")
    assert.equal('redlease.semaphore "exports"', tostring(sem))
    assert.is_true(sem:try_set_permits(3))
    assert.is_false(sem:try_set_permits(9))
    assert.equal("3", fx.raw("GET", "exports"))
    local g = assert(sem:acquire({ permits = 2 }))
    assert.equal("1", fx.raw("GET", "exports"))
    assert.equal(2, sem:held())
    assert.matches("^timeout: ", select(2, sem:acquire({ permits = 2, timeout = 0 })))
    assert.equal(1, sem:available_permits())
    assert.is_true(g:release())
    assert.is_true(g:release()) -- once only
    assert.equal("3", fx.raw("GET", "exports"))
    assert.matches("^not_owned: .*this client holds 0", select(2, sem:release()))
    assert(sem:add_permits(-1))
    assert.equal(2, sem:drain_permits())
    assert.equal(2, sem:held())
    assert(sem:release(2))
    assert.equal(3, sem:with(function(a, b) return a + b end, { timeout = 1 }, 1, 2))
    assert.equal(0, sem:held())
  end)

  it("a waiter gets a permit when another process releases one", function()
    local sem = fx.connect():semaphore("wake")
    assert(sem:try_set_permits(0))
    helper.spawn(later(fx, 0.4, "redis.call('publish', KEYS[2], redis.call('incrby', KEYS[1], 1))",
      { "wake", "redisson_sc:{wake}" }))
    local t0 = helper.now()
    local g = assert(sem:acquire({ timeout = 10 }))
    local took = helper.now() - t0
    assert.is_true(took >= 0.3 and took < 5, "took " .. took)
    assert(g:release())
  end)

  it("a timed wait gives up after about its timeout", function()
    local sem = fx.connect():semaphore("none")
    local t0 = helper.now()
    local g, err = sem:acquire({ timeout = 0.4 })
    local took = helper.now() - t0
    assert.is_nil(g)
    assert.matches("^timeout: ", err)
    assert.is_true(took >= 0.35 and took < 5, "took " .. took)
  end)

  it("refuses bad input", function()
    local c = fx.connect()
    local sem = c:semaphore("bad")
    assert.has_error(function() sem:acquire({ permits = -1 }) end,
      "bad argument 'permits' to 'acquire' (whole number from 0 expected, got -1)")
    assert.has_error(function() sem:acquire({ permits = 1.5 }) end)
    assert.has_error(function() sem:release(-2) end)
    assert.has_error(function() sem:try_set_permits("3") end)
    assert.has_error(function() sem:acquire({ wait = 1 }) end)
    assert.has_error(function() c:semaphore("") end)
    fx.raw("HSET", "a-lock", "owner", "1")
    local wrong = c:semaphore("a-lock")
    assert.matches('^server: "a%-lock" holds a value of another type %(hash%); redlease needs it '
      .. "for a semaphore %(WRONGTYPE%)", select(2, wrong:acquire({ timeout = 0 })))
    assert.is_nil(fx.raw("GET", "bad"))
  end)
end)

describe("permit-expirable semaphore", function()
  local fx = helper.fixture(before_each, after_each)

  it("gives permits with ids and leases, in Redisson's layout", function()
    local sem = fx.connect():permit_expirable_semaphore("workers")
    assert.is_true(sem:try_set_permits(2))
    local id = assert(sem:acquire({ lease = 5 }))
    assert.matches("^%x+$", id)
    assert.equal(32, #id)
    assert.equal("1", fx.raw("GET", "workers"))
    assert.equal(1, fx.raw("ZCARD", "{workers}:timeout"))
    assert.equal(1, sem:available_permits())
    assert(sem:update_lease_time(id, 10))
    assert(sem:release(id))
    assert.matches("^not_owned: ", select(2, sem:release(id)))
    assert.equal("2", fx.raw("GET", "workers"))
    local seen = sem:with(function(permit, x) return #permit + x end, { lease = 5 }, 1)
    assert.equal(33, seen)
    assert.equal(0, fx.raw("ZCARD", "{workers}:timeout"))
  end)

  it("a crashed worker's permit comes back by itself and wakes a waiter", function()
    local a, b = fx.connect(), fx.connect()
    local sa, sb = a:permit_expirable_semaphore("crash"), b:permit_expirable_semaphore("crash")
    assert(sa:try_set_permits(1))
    local lost_id = assert(sa:acquire({ lease = 0.4 }))
    assert.matches("^timeout: ", select(2, sb:acquire({ lease = 5, timeout = 0 })))
    local t0 = helper.now()
    local id = assert(sb:acquire({ lease = 5, timeout = 5 }))
    local took = helper.now() - t0
    assert.is_true(took >= 0.25 and took < 3, "took " .. took)
    assert.matches("^not_owned: ", select(2, sa:release(lost_id)))
    assert(sb:release(id))
  end)

  it("renews a permit with the watchdog when asked", function()
    local c = fx.connect({ watchdog_timeout = 0.6 })
    local sem = c:permit_expirable_semaphore("renewed")
    assert(sem:try_set_permits(1))
    local id = assert(sem:acquire({ watchdog = true }))
    helper.sleep(1.5) -- over two watchdog timeouts
    assert.is_false(sem:lost(id))
    assert.matches("^timeout: ", select(2, sem:acquire({ lease = 1, timeout = 0 })))
    assert(sem:release(id))
  end)

  it("refuses bad input", function()
    local sem = fx.connect():permit_expirable_semaphore("badperm")
    assert.has_error(function() sem:acquire() end,
      "bad argument 'lease' to 'acquire' (a lease in seconds, or watchdog = true, expected " ..
      "(one of them))")
    assert.has_error(function() sem:acquire({ lease = 1, watchdog = true }) end)
    assert.has_error(function() sem:acquire({ lease = 0 }) end)
    assert.has_error(function() sem:acquire({ watchdog = "yes" }) end)
    assert.has_error(function() sem:release(42) end)
    assert.has_error(function() sem:update_lease_time(string.rep("0", 32), -1) end)
    assert.matches("^argument: .*32 hex digits", select(2, sem:release("nope")))
    assert.matches("^not_owned: ", select(2, sem:release(string.rep("0", 32))))
  end)
end)

describe("count-down latch", function()
  local fx = helper.fixture(before_each, after_each)

  it("a wait ends when another process counts down to zero", function()
    local latch = fx.connect():count_down_latch("batch")
    assert.is_true(latch:try_set_count(2))
    assert.is_false(latch:try_set_count(5))
    assert.equal("2", fx.raw("GET", "batch"))
    assert(latch:count_down())
    assert.equal(1, latch:count())
    assert.matches("^timeout: ", select(2, latch:wait({ timeout = 0 })))
    -- as Redisson's countDown: DECR, DEL and "0" on the latch's channel at zero
    helper.spawn(later(fx, 0.4, "if redis.call('decr', KEYS[1]) <= 0 then " ..
      "redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], '0') end",
      { "batch", "redisson_countdownlatch__channel__{batch}" }))
    local t0 = helper.now()
    assert.is_true(latch:wait({ timeout = 10 }))
    local took = helper.now() - t0
    assert.is_true(took >= 0.3 and took < 5, "took " .. took)
    assert.equal(0, latch:count())
  end)

  it("a timed wait gives up; delete; bad input", function()
    local latch = fx.connect():count_down_latch("stuck")
    assert(latch:try_set_count(1))
    local t0 = helper.now()
    assert.matches("^timeout: .*did not reach 0", select(2, latch:wait({ timeout = 0.3 })))
    assert.is_true(helper.now() - t0 >= 0.25)
    assert.is_true(latch:delete())
    assert.is_false(latch:delete())
    assert.has_error(function() latch:try_set_count(0) end,
      "bad argument 'count' to 'try_set_count' (whole number from 1 expected, got 0)")
    assert.has_error(function() latch:wait({ timeout = -1 }) end)
    assert.has_error(function() latch:wait(5) end)
  end)
end)

describe("multi-lock", function()
  local fx = helper.fixture(before_each, after_each)

  it("takes all or none, and `with` releases all", function()
    local a, b = fx.connect(), fx.connect()
    local multi = a:multi_lock(a:lock("m:a"), a:fair_lock("m:b"), a:rw_lock("m:c").write)
    assert.equal("redlease.multi_lock of 3 locks", tostring(multi))
    fx.hold_elsewhere("m:b", 30000)
    assert.matches("^timeout: multi%-lock not acquired", select(2, multi:acquire({ timeout = 0 })))
    assert.equal(0, multi:held())
    assert.equal(0, fx.raw("EXISTS", "m:a"))
    fx.raw("DEL", "m:b")
    local g = assert(multi:acquire({ timeout = 1 }))
    assert.equal(3, multi:held())
    assert.matches("^timeout: ", select(2, b:lock("m:a"):acquire({ timeout = 0 })))
    assert(g:release())
    assert.equal(0, fx.raw("EXISTS", "m:a") + fx.raw("EXISTS", "m:b") + fx.raw("EXISTS", "m:c"))
    assert.equal("done", multi:with(function() return "done" end, { lease = 5 }))
    assert.matches("^not_owned: ", select(2, multi:release()))
  end)

  it("waits for a lock another process releases, and sets the lease on all", function()
    local c = fx.connect()
    local multi = c:multi_lock(c:lock("w:a"), c:lock("w:b"))
    fx.hold_elsewhere("w:b", 30000)
    helper.spawn("sleep 0.4; " .. fx.release_elsewhere_cmd("w:b"))
    local t0 = helper.now()
    local g = assert(multi:acquire({ timeout = 10, lease = 8 }))
    local took = helper.now() - t0
    assert.is_true(took >= 0.3 and took < 8, "took " .. took)
    local pttl = fx.raw("PTTL", "w:a")
    assert.is_true(pttl > 7000 and pttl <= 8000, "PTTL " .. pttl)
    assert(g:release())
  end)

  it("a RedLock needs a majority of independent servers", function()
    local servers = { helper.start_server(), helper.start_server(), helper.start_server() }
    local ok, err = pcall(function()
      local redlease = require "redlease"
      local locks = {}
      for i, s in ipairs(servers) do
        local c = assert(redlease.connect(s.url, { command_timeout = 0.5 }))
        fx.clients[#fx.clients + 1] = c
        locks[i] = c:lock("red")
      end
      local red = redlease.red_lock(locks[1], locks[2], locks[3])
      helper.kill_server(servers[3]) -- one of three down: a majority is left
      local g = assert(red:acquire({ timeout = 0, lease = 10 }))
      assert.equal(2, red:held())
      assert(g:release())
      assert.is_nil(helper.raw(servers[1], "GET", "red"))
      assert.equal(0, helper.raw(servers[1], "EXISTS", "red"))
      helper.kill_server(servers[2]) -- two down: no majority
      assert.matches("^timeout: RedLock not acquired", select(2, red:acquire({ timeout = 0 })))
      assert.equal(0, helper.raw(servers[1], "EXISTS", "red"))
    end)
    for _, s in ipairs(servers) do helper.stop_server(s) end
    assert(ok, err)
  end)

  it("refuses bad input", function()
    local c = fx.connect()
    assert.has_error(function() c:multi_lock() end)
    assert.has_error(function() c:multi_lock(c:lock("x"), "y") end,
      "bad argument #2 to 'multi_lock' (lock expected, got string)")
    assert.has_error(function() c:multi_lock(c:lock("x"), c:lock("x")) end)
    assert.has_error(function() c:multi_lock(c:lock("x")):acquire({ lease = 0 }) end)
  end)
end)
