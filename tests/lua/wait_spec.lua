-- Waiting for a lock another owner holds: one try, a timed wait, a wait forever woken by the
-- release (pub/sub, not polling), and Ctrl-C.
local helper = require "helper"

describe("waiting", function()
  local fx = helper.fixture(before_each, after_each)

  it("timeout = 0 makes one try", function()
    local lock = fx.connect():lock("job")
    fx.hold_elsewhere("job", 30000)
    local t0 = helper.now()
    local g, err = lock:acquire({ timeout = 0 })
    assert.is_nil(g)
    assert.matches("^timeout: ", err)
    assert.is_true(helper.now() - t0 < 1)
  end)

  it("a timed wait gives up after about its timeout", function()
    local lock = fx.connect():lock("job")
    fx.hold_elsewhere("job", 30000)
    local t0 = helper.now()
    local g, err = lock:acquire({ timeout = 0.5 })
    local took = helper.now() - t0
    assert.is_nil(g)
    assert.matches("^timeout: ", err)
    assert.is_true(took >= 0.45 and took < 5, "took " .. took)
  end)

  it("the timeout error says how long it waited, as Python's does", function()
    local client = fx.connect()
    fx.hold_elsewhere("job", 30000)
    local _, err = client:lock("job"):acquire({ timeout = 0.2 })
    assert.equal('timeout: lock "job" is held by another owner; not acquired within 0.200 s', err)
    _, err = client:lock("job"):acquire({ timeout = 0 }) -- one try: no wait to speak of
    assert.equal('timeout: lock "job" is held by another owner', err)
    local ok, raised = pcall(client:lock("job").with, client:lock("job"), print, { timeout = 0.05 })
    assert.is_false(ok)
    assert.equal('timeout: lock "job" is held by another owner; not acquired within 0.050 s',
      raised)
    _, err = client:multi_lock(client:lock("job")):acquire({ timeout = 0.1 })
    assert.matches("^timeout: multi%-lock not acquired within 0%.100 s: 1 of 1 lock%(s%) needed",
      err)
    local sem = client:semaphore("sem")
    sem:try_set_permits(0)
    _, err = sem:acquire({ timeout = 0.1 })
    assert.equal('timeout: semaphore "sem": 1 permit(s) not free within 0.100 s', err)
    _, err = sem:acquire({ timeout = 0 })
    assert.equal('timeout: semaphore "sem": 1 permit(s) not free now', err)
    local permits = client:permit_expirable_semaphore("pes")
    permits:try_set_permits(0)
    _, err = permits:acquire({ lease = 1, timeout = 0.1 })
    assert.equal('timeout: semaphore "pes": 1 permit(s) not free within 0.100 s', err)
    local latch = client:count_down_latch("latch")
    latch:try_set_count(1)
    _, err = latch:wait({ timeout = 0.1 })
    assert.equal('timeout: count-down latch "latch" did not reach 0 within 0.100 s', err)
  end)

  it("a waiter gets the lock when the holder releases it, long before the lease ends", function()
    local client = fx.connect()
    local lock = client:lock("job")
    fx.hold_elsewhere("job", 60000)
    helper.spawn("sleep 0.5; " .. fx.release_elsewhere_cmd("job"))
    local t0 = helper.now()
    local g = assert(lock:acquire({ timeout = 30 }))
    local took = helper.now() - t0
    assert.is_true(took >= 0.4 and took < 10, "took " .. took)
    -- woken by the message: the core's subscriber thread sent the acquire itself
    assert.equal(1, client:stats().woken_acquires)
    assert.is_true(g:release())
  end)

  it("a wait forever sleeps: little CPU time while the holder keeps it for a second", function()
    local lock = fx.connect():lock("job")
    fx.hold_elsewhere("job", 60000)
    helper.spawn("sleep 1.2; " .. fx.release_elsewhere_cmd("job"))
    local cpu0, t0 = os.clock(), helper.now()
    local g = assert(lock:acquire())
    local cpu, took = os.clock() - cpu0, helper.now() - t0
    assert.is_true(took >= 1, "took " .. took)
    assert.is_true(cpu < 0.3, ("%.3f s of CPU in %.3f s"):format(cpu, took))
    assert.is_true(g:release())
  end)

  it("Ctrl-C (SIGINT) stops a wait forever in the interpreter", function()
    fx.hold_elsewhere("job", 60000)
    local dir = helper.sh("mktemp -d"):gsub("%s+$", "")
    local script = dir .. "/wait.lua"
    local f = assert(io.open(script, "w"))
    f:write(([[
      local lock = assert(require("redlease").connect(%q)):lock("job")
      local pid = io.open("/proc/self/stat"):read("*l"):match("^%%d+")
      local out = io.open(%q, "w")
      out:write(pid)
      out:close()
      print(lock:acquire())
    ]]):format(fx.server.url, dir .. "/pid"))
    f:close()
    helper.spawn(("%s %s >%s/out 2>%s/err; echo $? >%s/code"):format(helper.lua, script, dir, dir,
                                                                      dir))
    local function read(name)
      local h = io.open(dir .. "/" .. name)
      if not h then return nil end
      local s = h:read("*a")
      h:close()
      return s ~= "" and s or nil
    end
    assert.is_true(helper.eventually(10, function() return read("pid") end))
    helper.sleep(0.3) -- well inside the wait
    helper.sh("kill -INT " .. read("pid"))
    local stopped = helper.eventually(5, function() return read("code") end)
    if not stopped then helper.sh("kill -9 " .. read("pid")) end
    local code, err = read("code"), read("err") or ""
    helper.sh("rm -rf " .. helper.quote(dir))
    assert.is_true(stopped, "the wait went on after SIGINT")
    assert.are_not.equal("0\n", code)
    assert.matches("interrupted", err)
  end)
end)
