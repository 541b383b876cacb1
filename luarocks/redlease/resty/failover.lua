-- What a worker does when its master changes (sentinel.lua learned it, from +switch-master or
-- from asking the sentinels again), as the C core's master_moved: every hold goes in doubt and
-- the watchdog runs a round at once on the new master, which confirms each hold there or reports
-- it lost (`failover` when the new master lacks it: replication is asynchronous); the subscriber
-- leaves the old master, resubscribes on the new one, and its waiters try again there. Calls in
-- progress on the old master end by their command timeout (a cosocket of another request cannot
-- be closed from here); new ones open on the new master.
--
-- Then the worker grants no new hold for failover_grace (the C core's failover_grace.c): the
-- promoted replica may lack a lock another client holds on the old master, and that holder,
-- hearing of the same failover, is told first.
--
-- On a Cluster the same is done per slot (slots_moved): cluster.lua tells which slots changed
-- owner, their holds go in doubt and the worker grants no new hold in them for the grace.
local slots = require "redlease.resty.slots"
local validity = require "redlease.resty.validity"
local watchdog = require "redlease.resty.watchdog"

local now_ms = function() return ngx.now() * 1000 end

local failover = {}

-- How many ms of the grace are left for a lock on `key` (0: none; grants go ahead).
function failover.grace_left(client, key)
  local now = now_ms()
  local paused = client.grants_paused_until
  if client.slots_paused_latest > now then
    local slot_paused = client.slots_paused_until[slots.of(key)]
    if slot_paused and slot_paused > paused then paused = slot_paused end
  end
  local left = paused - now
  return left > 0 and left or 0
end

function failover.master_moved(client)
  ngx.update_time()
  client.counters.master_changes = client.counters.master_changes + 1
  if client.failover_grace_ms > 0 then
    client.grants_paused_until = now_ms() + client.failover_grace_ms
  end
  for _, h in pairs(client.holds) do
    if h.watched and not h.lost and not h.releasing then
      validity.doubted(h, "its master changed")
    end
  end
  watchdog.round_now(client)
  client.sub:master_moved()
end

-- Slots of a Cluster changed owner (a list; cluster.lua learned it from a MOVED answer or the
-- map asked again), as the C core's slots_moved: the grace for those slots, their holds in doubt
-- and a round at once, which verifies them at the new owner.
function failover.slots_moved(client, moved)
  ngx.update_time()
  client.counters.master_changes = client.counters.master_changes + 1
  local is_moved = {}
  for _, s in ipairs(moved) do is_moved[s] = true end
  if client.failover_grace_ms > 0 then
    local paused = now_ms() + client.failover_grace_ms
    for _, s in ipairs(moved) do client.slots_paused_until[s] = paused end
    client.slots_paused_latest = paused
  end
  local any = false
  for _, h in pairs(client.holds) do
    if h.watched and not h.lost and not h.releasing and is_moved[slots.of(h.name)] then
      validity.doubted(h, "its slot moved to another node")
      any = true
    end
  end
  if any then watchdog.round_now(client) end
end

return failover
