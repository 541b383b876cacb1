-- A count-down latch of Redisson's layout (RCountDownLatch): try_set_count, count_down, count,
-- and wait until the count is 0 (woken by Redis pub/sub).
local args = require "redlease.args"
local methods = require "redlease.methods"

local Latch = {}
Latch.__index = Latch

function Latch.new(client, core_latch, name)
  return setmetatable({ client = client, name = name, _core = core_latch }, Latch)
end

-- Sets the count (>= 1) when the latch does not exist: true, or false when it exists.
function Latch:try_set_count(n)
  return self._core:try_set_count(args.whole("try_set_count", "count", n, 1))
end

-- Counts down by one; at 0 the latch is deleted and every waiter wakes.
function Latch:count_down() return self._core:count_down() end
-- The count now (0 when the latch does not exist).
function Latch:count() return self._core:count() end
-- wait{timeout = seconds (nil: forever)} -> true | nil, "timeout: ..." when not 0 in time.
function Latch:wait(opts) return self._core:wait(args.wait("wait", opts)) end
-- Deletes the latch whatever its count: true if it existed.
function Latch:delete() return self._core:delete() end

function Latch:__tostring() return ("redlease.count_down_latch %q"):format(self.name) end

methods.wrap(Latch, "latch", function(self) return self.client end)

return Latch
