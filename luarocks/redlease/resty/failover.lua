-- What a worker does when its master changes (sentinel.lua learned it, from +switch-master or
-- from asking the sentinels again), as the C core's master_moved: every hold goes in doubt and
-- the watchdog runs a round at once on the new master, which confirms each hold there or reports
-- it lost (`failover` when the new master lacks it: replication is asynchronous); the subscriber
-- leaves the old master, resubscribes on the new one, and its waiters try again there. Calls in
-- progress on the old master end by their command timeout (a cosocket of another request cannot
-- be closed from here); new ones open on the new master.
local validity = require "redlease.resty.validity"
local watchdog = require "redlease.resty.watchdog"

local failover = {}

function failover.master_moved(client)
  for _, h in pairs(client.holds) do
    if h.watched and not h.lost and not h.releasing then
      validity.doubted(h, "its master changed")
    end
  end
  watchdog.round_now(client)
  client.sub:master_moved()
end

return failover
