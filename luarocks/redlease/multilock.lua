-- Several locks (any kinds, any clients) taken as one by the running coroutine, all or none,
-- with Redisson's RedissonMultiLock rules; a RedLock takes a majority of locks on independent
-- servers. Its holds are guards, as a lock's are.
local args = require "redlease.args"
local Guard = require "redlease.guard"
local holds = require "redlease.holds"
local methods = require "redlease.methods"
local with = require "redlease.with"

local MultiLock = {}
MultiLock.__index = MultiLock
local made = 0

function MultiLock.new(core_multi, locks, redlock)
  made = made + 1
  local clients, seen = {}, {}
  for _, lock in ipairs(locks) do
    if not seen[lock.client] then
      seen[lock.client] = true
      clients[#clients + 1] = lock.client
    end
  end
  return setmetatable({ locks = locks, redlock = redlock, _core = core_multi,
    _key = "multi:" .. made, _clients = clients }, MultiLock)
end

-- acquire{timeout = seconds (nil: forever, 0: one try), lease = seconds (nil: watchdog),
-- max_hold = seconds} -> guard | nil, err. A fixed lease is set on each lock once all are taken.
function MultiLock:acquire(opts)
  local lease, wait, max_hold = args.acquire("acquire", opts)
  local hold, err = self._core:acquire(lease, wait, max_hold)
  if not hold then return nil, err end
  return Guard.new(hold, self._key, self._clients)
end

-- As acquire, but a failure raises its error instead of answering nil (as lock:guard).
function MultiLock:guard(opts)
  local lease, wait, max_hold = args.acquire("guard", opts)
  local hold, err = self._core:acquire(lease, wait, max_hold)
  if not hold then error(err, 0) end
  return Guard.new(hold, self._key, self._clients)
end

-- Releases every lock of it the running coroutine holds (through its newest guard).
function MultiLock:release()
  local g = holds.newest(self._key)
  if g then return g:release() end
  return self._core:release()
end

-- Acquires, calls fn(...), releases; returns fn's results (as lock:with).
function MultiLock:with(fn, opts, ...)
  args.callable("with", fn)
  local lease, wait, max_hold = args.acquire("with", opts)
  local hold, err = self._core:acquire(lease, wait, max_hold)
  if not hold then error(err, 0) end
  return with.finish(Guard.new(hold, self._key, self._clients), pcall(fn, ...))
end

-- Local, no round trip: how many of its locks the running coroutine holds.
function MultiLock:held() return self._core:held() end

function MultiLock:__tostring()
  return ("redlease.%s of %d locks"):format(self.redlock and "red_lock" or "multi_lock",
    #self.locks)
end

methods.wrap(MultiLock, "multi_lock", function(self) return self._clients end)

return MultiLock
