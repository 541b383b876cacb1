-- How long a hold is still guaranteed on the holder's clock (lock:valid_for(), lock:check()),
-- and the in-doubt state between held and lost (docs/semantics.md).
local helper = require "helper"

describe("validity", function()
  local fx = helper.fixture(before_each, after_each)

  it("a fixed-lease hold is guaranteed for its lease less the drift margin", function()
    local lock = fx.connect():lock("v")
    assert.equal(0, lock:valid_for())
    assert(lock:acquire({ lease = 10 }))
    local left = lock:valid_for()
    assert.is_true(left > 9.7 and left <= 9.898, "valid for " .. left) -- 10 s - 1% - 2 ms
    assert.is_false(lock:in_doubt())
    local checked = lock:check({ min_left = 5 })
    assert.is_true(checked > 9.7, "check answered " .. tostring(checked))
    local ok, err = lock:check({ min_left = 11 })
    assert.is_nil(ok)
    assert.matches("^in_doubt: .*less than the 11000 ms asked", err)
    assert.is_true(lock:release())
    assert.equal(0, lock:valid_for())
    assert.matches("^not_owned: ", select(2, lock:check()))
  end)

  it("drift_factor sets the margin and is checked", function()
    local lock = fx.connect({ drift_factor = 0.5 }):lock("v:drift")
    assert(lock:acquire({ lease = 2 }))
    local left = lock:valid_for()
    assert.is_true(left > 0.9 and left <= 0.998, "valid for " .. left)
    local client, err = require("redlease").connect(fx.server.url, { drift_factor = 0.6 })
    assert.is_nil(client)
    assert.equal("argument: bad argument 'drift_factor' to 'connect' (a number from 0 to 0.5 "
      .. "expected, got 0.6)", err)
    assert.has_error(function() lock:check({ min_left = -1 }) end)
  end)

  it("a paused server puts the hold in doubt, then it is held again", function()
    -- A 3 s lease renewed every second, each call cut at 1 s: a 2 s pause fails a round but
    -- leaves the lease.
    local lock = fx.connect({ watchdog_timeout = 3, command_timeout = 1 }):lock("v:doubt")
    assert(lock:acquire())
    helper.sh("kill -STOP " .. fx.server.pid)
    local doubted = helper.eventually(3, function() return lock:in_doubt() end)
    local during = { lock:check() }
    local still = lock:valid_for()
    helper.sh("kill -CONT " .. fx.server.pid)
    assert.is_true(doubted)
    assert.is_nil(during[1])
    assert.matches("^in_doubt: ", during[2])
    assert.is_true(still > 0, "in doubt, yet still guaranteed for a while")
    assert.is_true(helper.eventually(3, function() return not lock:in_doubt() end))
    assert.is_true(lock:check({ min_left = 1.5 }) > 1.5)
    assert.is_false(lock:lost())
    assert.is_true(lock:release())
  end)

  it("a pause past the deadline: in doubt, then lost", function()
    local lock = fx.connect({ watchdog_timeout = 1.5, command_timeout = 0.5 }):lock("v:lost")
    assert(lock:acquire())
    helper.sh("kill -STOP " .. fx.server.pid)
    local doubted = helper.eventually(3, function() return lock:in_doubt() end)
    local lost = helper.eventually(3, function() return lock:lost() end)
    helper.sh("kill -CONT " .. fx.server.pid)
    assert.is_true(doubted and lost)
    assert.equal(0, lock:valid_for())
    assert.matches("^lost: .*unreachable", select(2, lock:check()))
    assert.matches("^lost: ", select(2, lock:release()))
  end)
end)
