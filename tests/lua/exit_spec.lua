-- A script that ends while it holds a watchdog lock: the process exits at once and cleanly,
-- whether the Lua state is closed or not, and the lock, no longer renewed, expires afterwards.
local helper = require "helper"

local WATCHDOG = 2 -- seconds

local ENDINGS = {
  { "falls off the end of the script (the interpreter closes the state)", "", 0 },
  { "calls os.exit(0, true) (closes the state)", "os.exit(0, true)", 0 },
  { "calls os.exit(0) (does not close the state)", "os.exit(0)", 0 },
  { "raises an uncaught error (the interpreter closes the state)", "error('boom', 0)", 1 },
  { "drops its client and guard first, then closes the state",
    "client, guard = nil, nil collectgarbage()", 0 },
}

describe("exiting while holding", function()
  local fx = helper.fixture(before_each, after_each)

  for _, ending in ipairs(ENDINGS) do
    local what, last_line, want_code = ending[1], ending[2], ending[3]
    it(what, function()
      local code, out, err, took = helper.run_lua(([[
        client = assert(require("redlease").connect(%q, { watchdog_timeout = %d }))
        local lock = client:lock("job")
        guard = assert(lock:acquire())
        co = coroutine.create(function() assert(client:lock("job2"):acquire()) end) -- kept alive
        assert(coroutine.resume(co))
        io.write("held\n")
        %s
      ]]):format(fx.server.url, WATCHDOG, last_line))
      assert.equal(want_code, code, err)
      assert.equal("held\n", out)
      if want_code == 0 then assert.equal("", err) else assert.matches("boom", err) end
      assert.is_true(took < 5, "took " .. took)
      -- not released on the way out: still there, within one lease, and no longer renewed
      for _, name in ipairs({ "job", "job2" }) do
        local pttl = fx.raw("PTTL", name)
        assert.is_true(pttl > 0 and pttl <= WATCHDOG * 1000, name .. " PTTL " .. pttl)
      end
      assert.is_true(helper.eventually(WATCHDOG * 2, function()
        return fx.raw("EXISTS", "job") == 0 and fx.raw("EXISTS", "job2") == 0
      end))
    end)
  end
end)
