-- Taking back holds that nobody would release, from a timer so that no request waits for it:
-- - an acquire whose answer was lost (a timeout, a closed connection) may still run in Redis:
--   it was sent, and a stalled Redis runs what it had read when it wakes. When the run counted
--   nothing in that Redis field, one release under a fresh latch takes it back (as the core's
--   multi-lock does with a member whose acquire failed on the network: undo_maybe_taken);
-- - the release of a hold whose request ended (watchdog.lua) that failed on the network: every
--   count of its owner is released (release_fully).
-- Left alone, such a hold shuts every other owner out until its lease ends (30 s by default).
-- One timer per worker works through the queue, retrying with back-off while Redis does not
-- answer, each entry until the lease it may hold runs out: an outage costs one connection try
-- per back-off step, however many requests lost an answer. The same run's next acquire of the
-- lock waits for its entry first (takeback.settled): the release would take its new hold.
local calls = require "redlease.resty.calls"
local runner = require "redlease.resty.runner"
local semaphore = require "ngx.semaphore"

local takeback = {}
local RETRY_FIRST_S, RETRY_MAX_S = 0.05, 1

local function now_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

local function finish(client, t, failure)
  local q = client.takebacks
  if q[t.key] == t then q[t.key] = nil end
  t.finished = true
  if t.waiters > 0 then t.done:post(t.waiters) end
  if failure then
    ngx.log(ngx.WARN, ('redlease: lock "%s": could not take back the hold of %s; it expires by '
      .. "its lease (%s)"):format(t.shown, t.what, failure))
  end
end

-- Takes back one entry (Redis just answered) -> true | nil, err
local function take(client, t)
  if t.fully then
    local n, err = calls.release_fully(t.lock, t.field, t.lease) -- repeatable: the run ended
    if n == nil then return nil, err end
    return true
  end
  local reply, latch = calls.release(t.lock, t.field, t.lease, client:request_id())
  if reply == nil then return nil, latch end
  client:delete_latch(latch)
  if type(reply) == "number" and reply >= 1 then
    ngx.log(ngx.WARN, ('redlease: lock "%s": took back the hold of an acquire whose answer was '
      .. "lost (%s)"):format(t.shown, t.why))
  end
  return true
end

-- One pass over the entries queued now -> true, or nil and the error that stopped it.
local function pass(client)
  local queued = {} -- (the queue may grow while a pass waits for Redis)
  for _, t in pairs(client.takebacks) do queued[#queued + 1] = t end
  -- a round trip first: once Redis answers a request sent after the lost ones, it has run
  -- what it read before (they are read in the same event loop turn at the latest)
  local pong, err = runner.command(client, { "PING" })
  if pong == nil then return nil, err end
  for _, t in ipairs(queued) do
    if not t.finished then
      local ok, terr = take(client, t)
      if not ok then return nil, terr end
      finish(client, t)
    end
  end
  return true
end

local function drop_expired(client, err, all)
  local now = now_ms()
  for _, t in pairs(client.takebacks) do
    if all or now >= t.until_ms then finish(client, t, tostring(err)) end
  end
end

local function work(premature, client)
  local pause = RETRY_FIRST_S
  while next(client.takebacks) ~= nil do
    if client.shut then
      drop_expired(client, "the client is closed", true)
      break
    end
    local done, err = pass(client)
    if done then
      pause = RETRY_FIRST_S -- (entries queued during the pass: another pass)
    elseif premature or ngx.worker.exiting() then
      drop_expired(client, err, true) -- an exiting worker does not wait out the leases
      break
    else
      drop_expired(client, err, false)
      if next(client.takebacks) == nil then break end
      ngx.sleep(pause)
      pause = math.min(pause * 2, RETRY_MAX_S)
    end
  end
end

local function worker(premature, client)
  local ok, err = pcall(work, premature, client)
  client.takeback_running = false -- (a later entry starts the timer again)
  if not ok then
    drop_expired(client, "failed: " .. tostring(err), true)
    ngx.log(ngx.ERR, "redlease: taking back holds failed: ", tostring(err))
  end
end

-- Takes back, from the worker's timer, what `field` of lock `l` may hold in Redis until
-- `until_ms`. key: the run's hold key (a later acquire of the same run waits for it); why: the
-- error that lost the answer; fully: every count (a request that ended), else one.
function takeback.start(l, key, field, lease, until_ms, why, fully)
  local client = l._core
  local prev = client.takebacks[key]
  if prev then -- only an ended run's release can come now (its acquires waited for prev)
    prev.until_ms = math.max(prev.until_ms, until_ms)
    prev.fully = prev.fully or fully
    return
  end
  local t = { key = key, lock = l, field = field, lease = lease, until_ms = until_ms,
    shown = l._shown, why = why, fully = fully, waiters = 0, done = semaphore.new(),
    what = fully and "a request that ended" or "an acquire whose answer was lost" }
  client.takebacks[key] = t
  if client.takeback_running then return end
  local ok, err = ngx.timer.at(0, worker, client)
  if ok then
    client.takeback_running = true
  else
    drop_expired(client, "no timer: " .. tostring(err), true)
  end
end

-- Before an acquire by the run of hold key `key`: waits until its earlier lost acquire is taken
-- back, at most until deadline_ms. -> true | nil, err
function takeback.settled(client, key, deadline_ms, shown)
  local t = client.takebacks[key]
  if not t then return true end
  local left = deadline_ms - now_ms()
  if left > 0 then
    t.waiters = t.waiters + 1
    t.done:wait(left / 1000)
    t.waiters = t.waiters - 1
  end
  if t.finished then return true end
  return nil, ('connection: lock "%s": an earlier acquire by this request, whose answer was '
    .. "lost, is still being taken back"):format(shown)
end

return takeback
