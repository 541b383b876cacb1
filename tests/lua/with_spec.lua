-- lock:with(fn, opts, ...): acquire, call, release; fn's results out, fn's errors re-raised.
local helper = require "helper"

describe("lock:with", function()
  local fx = helper.fixture(before_each, after_each)

  it("holds the lock while fn runs, passes the extra arguments and returns all results", function()
    local lock = fx.connect():lock("job")
    local function body(a, b)
      assert.is_true(lock:held())
      assert.equal(1, fx.raw("EXISTS", "job"))
      return a, nil, b, nil
    end
    local results = { n = select("#", lock:with(body, nil, "x", 2)), lock:with(body, nil, "x", 2) }
    assert.same({ n = 4, "x", nil, 2, nil }, results)
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)

  it("re-raises fn's error, the same value, after releasing", function()
    local lock = fx.connect():lock("job")
    local boom = { reason = "boom" }
    local ok, err = pcall(lock.with, lock, function() error(boom) end)
    assert.is_false(ok)
    assert.equal(boom, err)
    assert.equal(0, fx.raw("EXISTS", "job"))
    ok, err = pcall(lock.with, lock, function() error("plain", 0) end)
    assert.same({ false, "plain" }, { ok, err })
  end)

  it("raises \"timeout\" without calling fn when the lock cannot be had", function()
    local lock = fx.connect():lock("job")
    fx.hold_elsewhere("job", 30000)
    local called = false
    local ok, err = pcall(lock.with, lock, function() called = true end, { timeout = 0 })
    assert.is_false(ok)
    assert.matches("^timeout: ", err)
    assert.is_false(called)
  end)

  it("raises \"lost\" after fn when the hold was lost meanwhile", function()
    local lock = fx.connect():lock("job")
    local ran = false
    local ok, err = pcall(lock.with, lock, function()
      fx.raw("DEL", "job")
      ran = true
      return "result"
    end)
    assert.is_true(ran)
    assert.is_false(ok)
    assert.matches("^lost: ", err)
  end)

  it("nests: the inner with re-enters the same hold", function()
    local lock = fx.connect():lock("job")
    local inner = lock:with(function()
      return lock:with(function() return lock:hold_count() end)
    end)
    assert.equal(2, inner)
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)

  it("lets fn yield where the interpreter allows it, the hold staying with its coroutine",
    function()
    if helper.interpreter == "Lua 5.1" then
      pending("Lua 5.1 cannot yield across pcall")
    end
    local lock = fx.connect():lock("job")
    local co = coroutine.wrap(function()
      return lock:with(function()
        coroutine.yield("inside")
        return "done"
      end)
    end)
    assert.equal("inside", co())
    assert.is_nil((lock:acquire({ timeout = 0 })))
    assert.equal("done", co())
    assert.equal(0, fx.raw("EXISTS", "job"))
  end)
end)
