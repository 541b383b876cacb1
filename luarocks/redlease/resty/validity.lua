-- How long a hold still excludes everyone else, on this worker's clock (as the core's
-- csrc/core/validity.c): its last confirmed acquire or renewal's sending + the lease - a margin
-- (lease × drift_factor + 2 ms). A hold is in doubt when a renewal failed since the last
-- confirmation, when its renewal is half a period late, or within the margin of its end.
local validity = {}

local FIXED_MS = 2 -- RL_DRIFT_FIXED_MS

local function lease_of(client, hold)
  return hold.watchdog and client.watchdog_ms or hold.lease_ms
end

-- -> "none" | "held" | "in_doubt" | "lost", and the ms (ngx.now() * 1000) until which it is
-- guaranteed (0: not).
function validity.state(client, hold, now_ms)
  if not hold or hold.count <= 0 then return "none", 0 end
  if hold.lost or now_ms >= hold.confirmed_until then return "lost", 0 end
  local lease = lease_of(client, hold)
  local valid_until = hold.confirmed_until - (lease * client.drift_ppm / 1000000 + FIXED_MS)
  if now_ms >= valid_until then return "in_doubt", 0 end
  if hold.in_doubt then return "in_doubt", valid_until end
  if hold.watchdog and hold.watched and hold.confirmed_until - now_ms < lease / 2 then
    return "in_doubt", valid_until
  end
  return "held", valid_until
end

-- A renewal failed: in doubt until one is confirmed (said once in the error log).
function validity.doubted(hold, why)
  if hold.in_doubt or hold.lost then return end
  hold.in_doubt = true
  ngx.log(ngx.WARN, ('redlease: lock "%s" in doubt (%s)'):format(hold.shown, why))
end

-- Redis confirmed the hold with a call sent at sent_at for lease ms.
function validity.confirmed(hold, sent_at, lease)
  hold.confirmed_until = sent_at + lease
  if hold.in_doubt and not hold.lost then
    hold.in_doubt = false
    ngx.log(ngx.WARN, ('redlease: lock "%s" held again: Redis confirmed its lease'):format(
      hold.shown))
  end
end

return validity
