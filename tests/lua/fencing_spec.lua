-- Fencing checked by Redis-stored data, from Lua: client:fenced_set refuses a stale holder's
-- token, and a forced release of a fenced lock advances the fence (docs/semantics.md).
local helper = require "helper"

describe("client:fenced_set", function()
  local fx = helper.fixture(before_each, after_each)

  it("writes with the newest token and refuses an older one; the newer value stands", function()
    local a, b = fx.connect(), fx.connect()
    local old = assert(a:fenced_lock("acct-lock"):acquire({ lease = 0.3 })).token
    assert.same({ true, 0 }, { a:fenced_set("acct", "old", old) })
    helper.sleep(0.5) -- the stale holder's lease ran out while it was paused
    local newer = assert(b:fenced_lock("acct-lock"):acquire({ timeout = 2 })).token
    assert.is_true(newer > old)
    assert.same({ true, old }, { b:fenced_set("acct", "newer", newer) })
    assert.same({ false, newer }, { a:fenced_set("acct", "old, late", old) })
    assert.equal("newer", fx.raw("GET", "acct"))
    assert.equal(tostring(newer), fx.raw("GET", "redlease_fence:{acct}"))
  end)

  it("a forced release advances the fence", function()
    local c = fx.connect()
    local lock = c:fenced_lock("pay")
    local token = assert(lock:acquire()).token
    assert.is_true(fx.connect():fenced_lock("pay"):force_unlock())
    assert.equal(tostring(token + 1), fx.raw("GET", "redisson_lock_token:{pay}"))
  end)

  it("checks its arguments", function()
    local c = fx.connect()
    assert.has_error(function() c:fenced_set("k", "v", 0) end)
    assert.has_error(function() c:fenced_set("k", "v", 1.5) end)
    assert.has_error(function() c:fenced_set("", "v", 1) end)
    assert.has_error(function() c:fenced_set("k", nil, 1) end)
    fx.raw("SET", "redlease_fence:{k}", "junk")
    local ok, err = c:fenced_set("k", "v", 1)
    assert.is_nil(ok)
    assert.matches("not a fencing token", err)
  end)
end)
