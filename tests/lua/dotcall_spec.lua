-- A method called with a dot instead of a colon (lock.acquire{...}) is a bad argument error that
-- says so, for every method of every object, instead of "attempt to index a nil value".
local redlease = require "redlease"
local helper = require "helper"

-- Every public method of obj: the functions its metatable's __index offers.
local function methods_of(obj)
  local index, out = getmetatable(obj).__index, {}
  for name, fn in pairs(index) do
    if type(fn) == "function" and not name:find("^_") and name ~= "new" then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

describe("a method called with a dot", function()
  local fx = helper.fixture(before_each, after_each)

  it("names the mistake, for every method of every object", function()
    local client = fx.connect()
    local lock = client:lock("a")
    local sem = client:semaphore("s")
    local objects = {
      client = client,
      lock = lock,
      ["fenced lock"] = client:fenced_lock("f"),
      ["rw lock's read"] = client:rw_lock("rw").read,
      semaphore = sem,
      ["permit semaphore"] = client:permit_expirable_semaphore("p"),
      latch = client:count_down_latch("l"),
      ["multi-lock"] = client:multi_lock(lock),
      guard = assert(lock:acquire()),
      permits = assert((function() sem:try_set_permits(1); return sem:acquire() end)()),
    }
    local checked = 0
    for what, obj in pairs(objects) do
      local names = methods_of(obj)
      assert.is_true(#names > 0, what)
      for _, name in ipairs(names) do
        for _, first in ipairs({ { timeout = 0 }, "x", false }) do
          local ok, err = pcall(obj[name], first)
          assert.is_false(ok, what .. "." .. name .. " did not raise")
          local shape = type(first) == "table" and "{...}" or "(...)"
          local word = err:match("use ([%w_]+):")
          assert.is_truthy(word, what .. "." .. name .. ": " .. tostring(err))
          assert.is_truthy(err:find(("bad argument #1 to '%s' (use %s:%s%s, not %s.%s%s)")
            :format(name, word, name, shape, word, name, shape), 1, true),
            what .. "." .. name .. ": " .. tostring(err))
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 100, checked)
  end)

  it("words the message as the user wrote the call, at the user's line", function()
    local lock = fx.connect():lock("job")
    local ok, err = pcall(function() local _ = lock.acquire({ timeout = 0 }) end)
    assert.is_false(ok)
    assert.matches("^[^:]*dotcall_spec%.lua:%d+: bad argument #1 to 'acquire' %(use " ..
      "lock:acquire{%.%.%.}, not lock%.acquire{%.%.%.}%)$", err)
    ok, err = pcall(function() local _ = lock.release() end)
    assert.is_false(ok)
    assert.matches("dotcall_spec%.lua:%d+: bad argument #1 to 'release' %(use " ..
      "lock:release%(%.%.%.%), not lock%.release%(%.%.%.%)%)$", err)
    -- the colon still works, and nothing was taken by the refused calls
    assert.equal(0, fx.raw("EXISTS", "job"))
    assert.is_true(assert(lock:acquire({ timeout = 0 })):release())
  end)

  it("argument errors still point at the caller's line through the check", function()
    local sem = fx.connect():semaphore("s")
    local ok, err = pcall(function() local _ = sem:acquire({ permits = -1 }) end)
    assert.is_false(ok)
    assert.matches("^[^:]*dotcall_spec%.lua:%d+: bad argument 'permits' to 'acquire'", err)
    ok, err = pcall(function() local _ = redlease.red_lock(42) end)
    assert.is_false(ok)
    assert.matches("^[^:]*dotcall_spec%.lua:%d+: bad argument #1 to 'red_lock'", err)
  end)
end)
