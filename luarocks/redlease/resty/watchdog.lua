-- The client's watchdog in this worker: an ngx.timer.every at a third of the watchdog timeout
-- renews every watchdog-mode hold in batched renew calls (up to PER_CALL keys each), all
-- pipelined on one connection: one round trip per round. A failed round is retried with
-- back-off; a hold is declared lost when Redis says so, or (unreachable) when the lease it last
-- confirmed runs out: a round may not outlast the first confirmed lease it carries, and a retry
-- is due by then. Each round also looks for holds whose run is over (owner.ended): those are
-- released and logged (see docs/openresty.md, "A request that ends holding a lock").
-- When the worker exits, nginx calls the timer once more ("premature"); that call goes on
-- renewing while requests of the exiting worker still hold locks, and returns when none do.
local calls = require "redlease.resty.calls"
local owner = require "redlease.resty.owner"
local runner = require "redlease.resty.runner"
local takeback = require "redlease.resty.takeback"
local validity = require "redlease.resty.validity"

local watchdog = {}
local PER_CALL = 1000

local now, log, ERR, WARN = ngx.now, ngx.log, ngx.ERR, ngx.WARN

local function now_ms() return now() * 1000 end

-- Releases holds whose run ended without releasing them (all their counts at once); one that
-- Redis does not answer now is taken back from a timer while its lease lasts (takeback.lua).
local function release_ended(client, ended)
  for _, h in ipairs(ended) do
    client:forget_hold(h)
    local ok, err = client:release_leftover(h)
    log(WARN, ("redlease: %s \"%s\" was still held (%d hold(s)) when the request or timer that "
      .. "took it ended; %s"):format(h.what or "lock", h.shown, h.count, ok and "released it"
      or "could not release it yet (" .. tostring(err) .. "), " .. (h.leftover
      and "it expires by its lease if it has one" or "retrying while its lease lasts")))
    if not ok and not h.leftover then
      takeback.start(h.lock, h.key, h.field, h.watchdog and client.watchdog_ms or h.lease_ms,
        h.confirmed_until, err, true)
    end
  end
end

-- Whether a release of h is on the wire: the run that sends it still runs (nginx can drop a run
-- during its release, and the mark would then stay for ever, keeping the hold from being
-- renewed or released, and an exiting worker's last watchdog call from returning).
local function releasing(h)
  local r = h.releasing
  if not r then return false end
  if owner.ended(r) then
    h.releasing = false
    return false
  end
  return true
end

-- One round. -> true when Redis answered (or nothing was to be renewed); and the earliest end of
-- a confirmed lease among the holds still renewed (math.huge: none).
local function round(client)
  local stats = client.counters
  local batch, ended = {}, {}
  ngx.update_time()
  local start = now_ms()
  for _, h in pairs(client.holds) do
    if not releasing(h) and owner.ended(h.run) then
      ended[#ended + 1] = h
    elseif h.watched and not h.releasing and not h.lost then
      if h.renew_until and start >= h.renew_until then
        client:hold_lost(h, "max_hold")
      elseif start >= h.confirmed_until then
        -- Redis was not reached in time: another owner may hold the lock from now on
        client:hold_lost(h, "unreachable")
      else
        batch[#batch + 1] = h
      end
    end
  end
  if #ended > 0 then release_ended(client, ended) end
  local earliest = math.huge
  for i = #batch, 1, -1 do -- released or lost while the ended runs' holds were released
    local h = batch[i]
    if client.holds[h.key] ~= h or h.releasing or h.lost or not h.watched then
      table.remove(batch, i)
    elseif h.confirmed_until < earliest then
      earliest = h.confirmed_until
    end
  end
  if #batch == 0 then return true, math.huge end
  for _, h in ipairs(batch) do h.in_round = true end
  local lease = client.watchdog_ms
  ngx.update_time()
  local sent_at = now_ms()
  -- the round may not outlast the first confirmed lease it carries: that hold is then declared
  -- lost when its lease ends, not a timeout later
  local timeout = math.max(1, math.min(client.command_ms, lease / 3, earliest - sent_at))
  local batch_calls, replies, err, trips, answers, ncalls, servers
  if client.cluster then -- per node, all nodes at once (cluster.lua)
    answers, err, trips, ncalls, servers = client.cluster:renew(batch,
      function(holds) return calls.renew_batch(holds, lease, PER_CALL) end, timeout)
    replies = not err and answers
  else
    batch_calls = calls.renew_batch(batch, lease, PER_CALL)
    replies, err, trips = runner.run(client, batch_calls, true, timeout)
    ncalls = #batch_calls
  end
  local epoch = client.answered_by -- the master that answered (a cluster: servers, per hold)
  ngx.update_time()
  local t = now_ms()
  local renewed = 0
  earliest = math.huge
  for i, h in ipairs(batch) do
    h.in_round = false
    local answer
    if answers then
      answer = answers[i]
    elseif replies then
      local r = replies[math.floor((i - 1) / PER_CALL) + 1]
      answer = type(r) == "table" and r[(i - 1) % PER_CALL + 1]
    end
    -- a hold released (or being released, or whose release failed) meanwhile: its answer says
    -- nothing about a hold
    if client.holds[h.key] == h and not h.releasing and not h.lost and h.watched then
      -- answered by another master than the one that confirmed it last (a failover; on a
      -- cluster, another server: a promoted replica, a restart): what that one confirmed may be
      -- gone, and a hold found missing was lost to the change, as the C core says it
      local by = servers and servers[i] or not servers and replies and epoch or nil
      local moved = by ~= nil and h.master ~= nil and h.master ~= by
      if answer == 1 then
        validity.confirmed(h, sent_at, lease)
        if by ~= nil then h.master = by end
        renewed = renewed + 1
      elseif answer == 0 then
        client:hold_lost(h, moved and "failover" or t >= h.confirmed_until and "expired"
          or "deleted")
      elseif answer == 2 then
        client:hold_lost(h, "owner_changed")
      elseif t >= h.confirmed_until then
        client:hold_lost(h, "unreachable")
      else
        validity.doubted(h, "its renewal failed")
      end
    end
    if not h.lost and h.watched and client.holds[h.key] == h and h.confirmed_until < earliest then
      earliest = h.confirmed_until
    end
  end
  if replies then
    stats.renew_rounds = stats.renew_rounds + 1
    stats.renew_round_trips = stats.renew_round_trips + trips
    stats.renew_calls = stats.renew_calls + ncalls
    stats.renewed_holds = stats.renewed_holds + renewed
    stats.last_round_holds = #batch
    return true, earliest
  end
  stats.renew_round_trips = stats.renew_round_trips + trips
  local failed = #batch -- (on a cluster, those of the nodes that did not answer)
  if answers then
    failed = 0
    for i = 1, #batch do if answers[i] == nil then failed = failed + 1 end end
  end
  log(WARN, ("redlease: renewal of %d hold(s) failed, retrying: %s"):format(failed, tostring(err)))
  return false, earliest
end

local function has_holds(client)
  return next(client.holds) ~= nil
end

local function tick(premature, client, exiting_loop)
  premature = premature or exiting_loop
  local wd = client.wd
  if client.shut or wd.busy or not has_holds(client) then return end
  wd.busy = true
  local period = client.watchdog_ms / 3000
  local retry, retry_max = math.min(0.1, period / 4), math.min(2, period / 2)
  -- a bounded collector step, so that runs whose request ended are found (owner.ended)
  collectgarbage("step", 64)
  local ok, err = pcall(function()
    while not client.shut and has_holds(client) do
      local renewed, earliest = round(client)
      if renewed then
        if not premature then return end
        retry = math.min(0.1, period / 4)
        ngx.sleep(period) -- exiting: this call is the last, it keeps the rounds going
      else
        -- retry with back-off, but be awake when the first confirmed lease ends
        ngx.update_time()
        ngx.sleep(math.max(0.001, math.min(retry, (earliest - now_ms()) / 1000)))
        retry = math.min(retry * 2, retry_max)
      end
      ngx.update_time()
    end
  end)
  wd.busy = false
  if not ok then log(ERR, "redlease: watchdog round failed: ", err) end
end

-- On a cluster, while the worker holds locks: the map asked of a node every half failover grace
-- (cluster.lua's poll), so that a holder is told of a failover within the grace though none of
-- its calls met it, as the C core's watchdog does.
local function topology_tick(premature, client)
  if premature or client.shut or not has_holds(client) then return end
  local every = math.max(100, client.failover_grace_ms / 2)
  local ok, err = pcall(client.cluster.poll, client.cluster, every)
  if not ok then log(ERR, "redlease: cluster map check failed: ", err) end
end

-- A round now (the master changed: sentinel.lua), unless one is under way.
function watchdog.round_now(client)
  if client.wd.started and not client.wd.busy and not ngx.worker.exiting() then
    ngx.timer.at(0, tick, client)
  end
end

-- Starts the client's timer in this worker (once).
function watchdog.start(client)
  local wd = client.wd
  if wd.started then
    -- the worker is exiting and its last timer call has returned: a request still running
    -- here took a new hold, which a zero-delay timer (still allowed) keeps renewing
    if ngx.worker.exiting() and not wd.busy then ngx.timer.at(0, tick, client, true) end
    return true
  end
  local ok, err
  if ngx.worker.exiting() then
    -- the worker's first hold, taken while it exits: nginx refuses a recurring timer now, and
    -- a zero-delay call in its exiting loop renews until no hold is left
    ok, err = ngx.timer.at(0, tick, client, true)
  else
    ok, err = ngx.timer.every(client.watchdog_ms / 3000, tick, client)
    if ok and client.cluster and client.failover_grace_ms > 0 then
      -- (every half grace, not more often than every 100 ms however short the grace)
      ok, err = ngx.timer.every(math.max(100, client.failover_grace_ms / 2) / 1000, topology_tick,
        client)
    end
  end
  if not ok then return nil, "memory: cannot start the watchdog timer: " .. tostring(err) end
  wd.started = true
  return true
end

return watchdog
