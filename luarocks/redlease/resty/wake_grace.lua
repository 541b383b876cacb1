-- Recent hand-overs of one client (as csrc/core/wake_grace.c): locks it released while Redis
-- reported that the release's message reached a waiter. A waiting acquire of such a lock by
-- this client soon after leaves it to the woken waiter first (docs/semantics.md, "Fairness of
-- the plain lock"). A ring of the most recent ones: an older one is long past its grace.
local Handovers = {}
Handovers.__index = Handovers

local RECENT = 8

function Handovers.new()
  return setmetatable({ keys = {}, untils = {}, floors = {}, next = 0 }, Handovers)
end

-- The lock `key` (kind and name) woke a waiter: leave it to that waiter until `until_ms`.
-- floor: the messages on its channel that are not that waiter's (Sub:observe), or nil.
function Handovers:note(key, until_ms, floor)
  local slot = self.next % RECENT + 1
  self.next = self.next + 1
  self.keys[slot], self.untils[slot], self.floors[slot] = key, until_ms, floor or 0
end

-- Until when an acquire of `key` should leave the lock to the woken waiter, and the floor noted
-- with it; nil when it need not.
function Handovers:until_ms(key, now_ms)
  if self.next == 0 then return nil end -- none yet (a lock per request: the common case)
  for slot = 1, math.min(self.next, RECENT) do
    if self.keys[slot] == key and self.untils[slot] > now_ms then
      return self.untils[slot], self.floors[slot]
    end
  end
  return nil
end

return Handovers
