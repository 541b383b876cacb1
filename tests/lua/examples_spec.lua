-- The cron example (examples/lua/nightly_report.lua): its script run-demo, as `make demo-lua`
-- runs it, against the test's throwaway server. Only under lua5.4, the demo's interpreter: it
-- takes 15 s of sleeps, and LuaJIT's rock is the same code, tested by the other specs.
local helper = require "helper"
if helper.lua ~= "lua5.4" then return end

describe("the cron example", function()
  local fx = helper.fixture(before_each, after_each)

  it("runs on one host at a time, and again one lease after a host died mid-job", function()
    local out = helper.sh(("cd ../.. && REDIS_URL=%s LUA=%s examples/lua/run-demo 2>&1; %s")
      :format(helper.quote(fx.server.url), helper.lua, 'echo "exit $?"'))
    assert.matches("\nexit 0\n$", out)
    local took, skipped = {}, {}
    for host in out:gmatch("%[(%a+)%] took the lock") do took[#took + 1] = host end
    for host in out:gmatch("%[(%a+)%] another host is running the job") do
      skipped[#skipped + 1] = host
    end
    -- three at once: one ran, two skipped; delta took it and was killed mid-job; epsilon found
    -- delta's lock still taken; zeta, one lease later, ran
    assert.equal(3, #took, out)
    assert.matches("^%a+$", took[1])
    assert.same({ "delta", "zeta" }, { took[2], took[3] }, out)
    assert.equal(3, #skipped, out)
    assert.equal("epsilon", skipped[3], out)
    assert.matches("%[delta%] killed", out)
    assert.not_matches("%[delta%] job done", out)
    assert.matches("%[zeta%] job done: report.csv", out)
    local done = 0
    for _ in out:gmatch("job done") do done = done + 1 end
    assert.equal(2, done, out)
  end)
end)
