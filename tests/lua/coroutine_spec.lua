-- Holds belong to (client, coroutine): reentrant within a coroutine, never shared between two,
-- and released by the collector once their coroutine is gone.
local helper = require "helper"

describe("coroutines", function()
  local fx = helper.fixture(before_each, after_each)

  it("re-entering in the same coroutine adds holds; each release takes one away", function()
    local lock = fx.connect():lock("job")
    for _ = 1, 3 do assert(lock:acquire({ timeout = 0 })) end
    assert.equal(3, lock:hold_count())
    local owner, count = next(fx.hash("job"))
    assert.equal("3", count)
    assert.is_true(lock:release())
    assert.equal("2", fx.hash("job")[owner])
    assert.is_true(lock:release())
    assert.equal(1, lock:hold_count())
    assert.is_true(lock:release())
    assert.equal(0, fx.raw("EXISTS", "job"))
    local ok, err = lock:release()
    assert.is_nil(ok)
    assert.matches("^not_owned: ", err)
  end)

  it("two coroutines on one thread never share a hold", function()
    local lock = fx.connect():lock("job")
    local a = coroutine.create(function()
      assert(lock:acquire())
      coroutine.yield(lock:held())
      return lock:release()
    end)
    assert.same({ true, true }, { coroutine.resume(a) })
    -- another coroutine, and the main one, are other owners
    local b = coroutine.wrap(function()
      local g, err = lock:acquire({ timeout = 0 })
      local released, rerr = lock:release()
      return g, err, lock:held(), lock:hold_count(), released, rerr
    end)
    local g, err, held, count, released, rerr = b()
    assert.is_nil(g)
    assert.matches("^timeout: ", err)
    assert.is_false(held)
    assert.equal(0, count)
    assert.is_nil(released)
    assert.matches("^not_owned: ", rerr)
    assert.is_nil((lock:acquire({ timeout = 0 })))
    assert.equal("1", select(2, next(fx.hash("job"))))
    -- the owner, resumed, still holds it and releases it
    assert.same({ true, true }, { coroutine.resume(a) })
    assert.equal(0, fx.raw("EXISTS", "job"))
    assert(lock:acquire({ timeout = 0 }))
  end)

  it("two locks of one client on the same name are one lock for a coroutine", function()
    local client = fx.connect()
    local one, two = client:lock("job"), client:lock("job")
    assert(one:acquire())
    assert(two:acquire({ timeout = 0 }))
    assert.equal(2, one:hold_count())
    assert.is_true(two:release())
    assert.is_true(two:release())
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)

  it("a guard releases the hold it stands for, whichever coroutine calls it", function()
    local lock = fx.connect():lock("job")
    local guard = coroutine.wrap(function() return assert(lock:acquire()) end)()
    assert.is_false(lock:held())
    assert.is_true(guard:release())
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)

  it("releases, through the collector, what a collected coroutine still held", function()
    local lock = fx.connect():lock("job")
    local co = coroutine.create(function() assert(lock:acquire()) end)
    assert.is_true((coroutine.resume(co)))
    assert.equal(1, fx.raw("EXISTS", "job"))
    co = nil -- luacheck: ignore
    assert.is_true(helper.eventually(5, function()
      collectgarbage()
      return fx.raw("EXISTS", "job") == 0
    end))
  end)

  it("keeps a living coroutine's holds when it drops its guards", function()
    local lock = fx.connect():lock("job")
    lock:acquire() -- guard dropped at once
    for _ = 1, 3 do collectgarbage() end
    assert.equal(1, fx.raw("EXISTS", "job"))
    assert.is_true(lock:held())
    assert.is_true(lock:release())
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)

  it("never gives a new coroutine the id of a collected one", function()
    local lock = fx.connect():lock("job")
    local seen = {}
    for _ = 1, 50 do
      coroutine.wrap(function()
        local g = assert(lock:acquire())
        seen[#seen + 1] = next(fx.hash("job"))
        g:release()
      end)()
      collectgarbage()
    end
    local distinct = {}
    for _, owner in ipairs(seen) do distinct[owner] = true end
    assert.equal(50, helper.count(distinct))
  end)
end)
