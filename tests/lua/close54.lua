-- The `<close>` tests, as source that only Lua 5.4 can compile (close_spec.lua loads it there).
local helper = require "helper"

return function(fx)
  return {
    ["a <close> guard releases when its scope ends normally"] = function()
      local lock = fx.connect():lock("job")
      do
        local guard <close> = assert(lock:acquire())
        assert.equal(1, fx.raw("EXISTS", "job"))
      end
      assert.equal(0, fx.raw("EXISTS", "job"))
    end,

    ["a <close> guard releases when its scope ends with an error, which goes on"] = function()
      local lock = fx.connect():lock("job")
      local ok, err = pcall(function()
        local guard <close> = assert(lock:acquire())
        error({ code = 7 })
      end)
      assert.is_false(ok)
      assert.same({ code = 7 }, err)
      assert.equal(0, fx.raw("EXISTS", "job"))
    end,

    ["a <close> guard whose hold was lost raises \"lost\" after the body"] = function()
      local lock = fx.connect():lock("job")
      local reached = false
      local ok, err = pcall(function()
        local guard <close> = assert(lock:acquire())
        fx.raw("DEL", "job")
        reached = true
      end)
      assert.is_true(reached)
      assert.is_false(ok)
      assert.matches("^lost: ", err)
    end,

    ["a <close> guard released inside its scope does nothing more"] = function()
      local lock = fx.connect():lock("job")
      local outer = assert(lock:acquire())
      do
        local guard <close> = assert(lock:acquire())
        assert.is_true(guard:release())
      end
      assert.equal(1, lock:hold_count())
      assert.is_true(outer:release())
      assert.equal(0, fx.raw("EXISTS", "job"))
    end,

    ["os.exit(code, true) inside a <close> scope releases the lock"] = function()
      local code, out, err = helper.run_lua(([[
        local lock = assert(require("redlease").connect(%q)):lock("job")
        local guard <close> = assert(lock:acquire())
        os.exit(3, true)
      ]]):format(fx.server.url))
      assert.equal(3, code, err)
      assert.equal("", out .. err)
      assert.equal(0, fx.raw("EXISTS", "job"))
    end,

    ["a <close> semaphore guard gives its permits back; a multi-lock guard releases all"] =
    function()
      local c = fx.connect()
      local sem = c:semaphore("pool")
      assert(sem:try_set_permits(2))
      do
        local guard <close> = assert(sem:acquire({ permits = 2 }))
        assert.equal("0", fx.raw("GET", "pool"))
      end
      assert.equal("2", fx.raw("GET", "pool"))
      local multi = c:multi_lock(c:lock("a"), c:lock("b"))
      do
        local guard <close> = assert(multi:acquire())
        assert.equal(2, fx.raw("EXISTS", "a", "b"))
      end
      assert.equal(0, fx.raw("EXISTS", "a", "b"))
    end,

    ["a <close> on acquire's nil answer runs its block without the lock; guard raises"] =
    function()
      local lock = fx.connect():lock("job")
      fx.hold_elsewhere("job", 30000)
      local ran_unlocked
      do -- the trap docs/lua.md warns of: a nil <close> value is allowed, and the block runs
        local guard <close> = lock:acquire({ timeout = 0 })
        ran_unlocked = guard == nil
      end
      assert.is_true(ran_unlocked)
      local reached = false
      local ok, err = pcall(function()
        local guard <close> = lock:guard({ timeout = 0.1 })
        reached = true
      end)
      assert.is_false(ok)
      assert.is_false(reached)
      assert.equal('timeout: lock "job" is held by another owner; not acquired within 0.100 s', err)
      fx.raw("DEL", "job")
      do
        local guard <close> = lock:guard({ timeout = 0 })
        assert.equal(1, fx.raw("EXISTS", "job"))
      end
      assert.equal(0, fx.raw("EXISTS", "job"))
    end,
  }
end
