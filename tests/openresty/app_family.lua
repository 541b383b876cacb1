-- The test app's handlers for semaphores, permit-expirable semaphores, multi-locks and RedLock
-- (tests/openresty/test_family.py): the rock's sequences (tests/lua/family_spec.lua) run in one
-- request each, answered as "key=value" lines.
local redlease = require "redlease"
local app = require "app"

local family = {}
local var, out = ngx.var, app.out

local function name_arg() return ngx.unescape_uri(var.arg_name) end

local function now()
  ngx.update_time()
  return ngx.now()
end

local function second_client()
  app.other = app.other or assert(redlease.connect(app.url))
  return app.other
end

local function err_of(_, err) return err end

-- /semaphore?name=: the rock's first semaphore test.
function family.semaphore()
  local name = name_arg()
  local sem = app.client:semaphore(name)
  local r = { shown = tostring(sem) }
  r.set = sem:try_set_permits(3)
  r.set_again = sem:try_set_permits(9)
  local g = assert(sem:acquire { permits = 2 })
  r.after_acquire = sem:available_permits()
  r.held = sem:held()
  r.busy = err_of(sem:acquire { permits = 2, timeout = 0 })
  r.released = g:release()
  r.released_again = g:release()
  r.after_release = sem:available_permits()
  r.not_owned = err_of(sem:release())
  assert(sem:add_permits(-1))
  r.drained = sem:drain_permits()
  r.held_drained = sem:held()
  assert(sem:release(2))
  r.with = sem:with(function(a, b) return a + b end, { timeout = 1 }, 1, 2)
  r.held_end = sem:held()
  r.missing = err_of(app.client:semaphore(name .. ":none"):acquire { timeout = 0 })
  local t0 = now()
  r.gave_up = err_of(app.client:semaphore(name .. ":none"):acquire { timeout = 0.3 })
  r.waited = now() - t0
  r.bad_permits = select(2, pcall(sem.acquire, sem, { permits = -1 })):match("bad argument.*")
  r.bad_release = not pcall(sem.release, sem, -2) and not pcall(sem.try_set_permits, sem, "3")
  r.bad_name = not pcall(app.client.semaphore, app.client, "")
  out(r)
end

-- /sem_wait?name=&n=&timeout=&hold=: n light threads each wait for one permit and keep it
-- `hold` s; answers how many got one and when (epoch s).
function family.sem_wait()
  local sem = app.client:semaphore(name_arg())
  local n, timeout, hold = tonumber(var.arg_n), tonumber(var.arg_timeout), tonumber(var.arg_hold)
  local threads = {}
  for i = 1, n do
    threads[i] = ngx.thread.spawn(function()
      local g = sem:acquire { timeout = timeout }
      if not g then return false end
      local at = now()
      ngx.sleep(hold)
      assert(g:release())
      return at
    end)
  end
  local got, at = 0, {}
  for i = 1, n do
    local _, t = ngx.thread.wait(threads[i])
    if t then
      got = got + 1
      at[#at + 1] = t
    end
  end
  out { got = got, at = table.concat(at, ",") }
end

-- /keep?name=: takes 2 permits of a semaphore, a renewed permit and a 60 s one, and ends
-- without giving any back.
function family.keep()
  local name = name_arg()
  local sem = app.client:semaphore(name)
  assert(sem:acquire { permits = 2, timeout = 0 })
  local ps = app.client:permit_expirable_semaphore(name .. ":p")
  local a = assert(ps:acquire { watchdog = true, timeout = 0 })
  local b = assert(ps:acquire { lease = 60, timeout = 0 })
  out { a = a, b = b }
end

-- /permits?name=&sleep=: the rock's permit-expirable semaphore tests.
function family.permits()
  local name = name_arg()
  local c = app.client
  local sem = c:permit_expirable_semaphore(name)
  local r = { shown = tostring(sem) }
  r.set = sem:try_set_permits(2)
  local id = assert(sem:acquire { lease = 5 })
  r.id = id
  r.available = sem:available_permits()
  r.update = sem:update_lease_time(id, 10)
  r.release = sem:release(id)
  r.release_again = err_of(sem:release(id))
  r.with = sem:with(function(permit, x) return #permit + x end, { lease = 5 }, 1)
  -- a crashed worker's permit comes back by itself and wakes a waiter
  local other = second_client():permit_expirable_semaphore(name .. ":crash")
  local mine = c:permit_expirable_semaphore(name .. ":crash")
  assert(mine:try_set_permits(1))
  local lost_id = assert(mine:acquire { lease = 0.4 })
  r.busy = err_of(other:acquire { lease = 5, timeout = 0 })
  local t0 = now()
  local got = assert(other:acquire { lease = 5, timeout = 5 })
  r.took = now() - t0
  r.expired_release = err_of(mine:release(lost_id))
  assert(other:release(got))
  -- renewed by the watchdog
  local renewed = c:permit_expirable_semaphore(name .. ":renewed")
  assert(renewed:try_set_permits(1))
  local wid = assert(renewed:acquire { watchdog = true })
  ngx.sleep(tonumber(var.arg_sleep))
  r.lost = renewed:lost(wid)
  r.still_busy = err_of(renewed:acquire { lease = 1, timeout = 0 })
  r.renewed_release = renewed:release(wid)
  r.bad_opts = select(2, pcall(sem.acquire, sem)):match("bad argument.*")
  r.bad_id = err_of(sem:release("nope"))
  r.unknown = err_of(sem:release(string.rep("0", 32)))
  r.bad_lease = not pcall(sem.update_lease_time, sem, string.rep("0", 32), -1)
  out(r)
end

-- /multi?name=: the rock's multi-lock tests, the other owner being a second client.
function family.multi()
  local n = name_arg()
  local a, b = app.client, second_client()
  local multi = a:multi_lock(a:lock(n .. ":a"), a:fair_lock(n .. ":b"), a:rw_lock(n .. ":c").write)
  local r = { shown = tostring(multi) }
  local other = assert(b:lock(n .. ":b"):acquire { lease = 30 })
  r.busy = err_of(multi:acquire { timeout = 0 })
  r.held_none = multi:held()
  r.none_left = not a:lock(n .. ":a"):locked()
  assert(other:release())
  local g = assert(multi:acquire { timeout = 1 })
  r.held = multi:held()
  r.excluded = err_of(b:lock(n .. ":a"):acquire { timeout = 0 })
  r.released = g:release()
  r.with = multi:with(function() return "done" end, { lease = 5 })
  r.not_owned = err_of(multi:release())
  -- waits for a lock another owner releases, and sets the lease on all
  local w = a:multi_lock(a:lock(n .. ":wa"), a:lock(n .. ":wb"))
  local held_b = assert(b:lock(n .. ":wb"):acquire { lease = 30 })
  ngx.timer.at(0.4, function() held_b:release() end)
  local t0 = now()
  local wg = assert(w:acquire { timeout = 10, lease = 8 })
  r.waited = now() - t0
  r.wa_lease = a:lock(n .. ":wa"):remaining()
  r.w_released = wg:release()
  r.bad_empty = not pcall(a.multi_lock, a)
  r.bad_arg = select(2, pcall(a.multi_lock, a, a:lock("x"), "y")):match("bad argument.*")
  r.bad_twice = not pcall(a.multi_lock, a, a:lock("x"), a:lock("x"))
  r.bad_lease = not pcall(multi.acquire, multi, { lease = 0 })
  out(r)
end

app.red_clients = {}

-- /redlock?urls=u1,u2,u3&timeout=: a RedLock over one lock per server: acquire (lease 10 s),
-- how many it holds, release.
function family.redlock()
  local locks = {}
  for u in ngx.unescape_uri(var.arg_urls):gmatch("[^,]+") do
    app.red_clients[u] = app.red_clients[u] or assert(redlease.connect(u,
      { command_timeout = 0.5, connect_timeout = 0.5 }))
    locks[#locks + 1] = app.red_clients[u]:lock("red")
  end
  local red = redlease.red_lock(unpack(locks))
  local g, err = red:acquire { timeout = 0, lease = 10 }
  local r = { shown = tostring(red), acquired = g ~= nil, err = err, held = red:held() }
  if g then r.released = g:release() end
  out(r)
end

-- /wire_family?name=: the sequence tests/openresty/test_family.py also runs with the C rock.
function family.wire_family()
  local name = name_arg()
  local c = app.client
  local sem = c:semaphore(name)
  assert(sem:try_set_permits(3))
  local g = assert(sem:acquire { permits = 2 })
  assert(g:release())
  assert(sem:drain_permits() == 3)
  assert(sem:release(3))
  assert(sem:add_permits(1))
  assert(sem:available_permits() == 4)
  local ps = c:permit_expirable_semaphore(name .. ":p")
  assert(ps:try_set_permits(2))
  local id = assert(ps:acquire { lease = 5 })
  assert(ps:update_lease_time(id, 10))
  assert(ps:release(id))
  assert(ps:available_permits() == 2)
  local multi = c:multi_lock(c:lock(name .. ":a"), c:lock(name .. ":b"))
  local mg = assert(multi:acquire { lease = 5, timeout = 1 })
  assert(mg:release())
  out { ok = true }
end

return family
