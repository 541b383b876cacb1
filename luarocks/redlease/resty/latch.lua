-- A count-down latch of Redisson's layout (RCountDownLatch), as the core's (csrc/core/family/
-- countdown.c): STRING `name` = the count, deleted when it reaches 0; waiters listen on
-- "redisson_countdownlatch__channel__{" .. name .. "}" (braces always), where "0" says the count
-- reached zero and "1" that a new count was set (or the latch deleted). A wait sleeps on the
-- worker's subscriber, so the worker serves other requests meanwhile.
local args = require "redlease.args"
local keys = require "redlease.resty.keys"
local owner = require "redlease.resty.owner"
local runner = require "redlease.resty.runner"

local Latch = {}
Latch.__index = Latch

local ZERO_COUNT, NEW_COUNT, PUBLISH = "0", "1", "publish"

-- client: the internal client; latch.client is the public one, as in the rock.
function Latch.new(client, name)
  if client.cluster then client.cluster.check_name(name, "latch") end
  return setmetatable({ client = client.public, name = name, _core = client,
    _channel = "redisson_countdownlatch__channel__{" .. name .. "}", _shown = keys.shown(name) },
    Latch)
end

-- One of the latch's scripts -> its integer answer | nil, err
local function write(self, what, script, ...)
  local ok, err = self._core:ready(what)
  if not ok then return nil, err end
  local replies
  replies, err = runner.run(self._core, { { script, 2, self.name, self._channel, ... } }, false)
  if not replies then return nil, err end
  if type(replies[1]) ~= "number" then return nil, "server: unexpected answer to " .. what end
  return replies[1]
end

-- Sets the count (>= 1) when the latch does not exist: true, or false when it exists.
function Latch:try_set_count(n)
  n = args.whole("try_set_count", "count", n, 1)
  local answer, err = write(self, "try_set_count", "latch_try_set", n, NEW_COUNT, PUBLISH)
  if answer == nil then return nil, err end
  return answer == 1
end

-- Counts down by one; at 0 the latch is deleted and every waiter wakes.
function Latch:count_down()
  local left, err = write(self, "count_down", "latch_count_down", ZERO_COUNT, PUBLISH)
  if left == nil then return nil, err end
  return true
end

-- Deletes the latch whatever its count: true if it existed.
function Latch:delete()
  local answer, err = write(self, "delete", "latch_delete", NEW_COUNT, PUBLISH)
  if answer == nil then return nil, err end
  return answer == 1
end

local function count(self)
  local v, err = runner.command(self._core, { "GET", self.name })
  if v == nil then return nil, err end
  local n = tonumber(v)
  if type(v) == "string" and n then return n end
  return 0 -- none (resp.null)
end

-- The count now (0 when the latch does not exist).
function Latch:count()
  local ok, err = self._core:ready("count")
  if not ok then return nil, err end
  return count(self)
end

local function timed_out(self, wait_ms)
  return nil, ('timeout: count-down latch "%s" did not reach 0 %s'):format(self._shown,
    wait_ms == 0 and "yet" or "within the wait")
end

-- wait{timeout = seconds (nil: forever)} -> true | nil, "timeout: ..." when not 0 in time.
function Latch:wait(opts)
  local wait_ms = args.wait("wait", opts)
  local client = self._core
  local ok, err = client:ready("wait")
  if not ok then return nil, err end
  if wait_ms == 0 then
    local n, cerr = count(self)
    if n == nil then return nil, cerr end
    if n > 0 then return timed_out(self, wait_ms) end
    return true
  end
  ngx.update_time()
  local deadline = wait_ms > 0 and ngx.now() * 1000 + wait_ms or nil
  local run = owner.run()
  local entry, jerr = client.sub:join(self._channel, run)
  if not entry then return nil, jerr end
  entry.wake_all = true -- the count reached 0 ("0") lets every waiter go
  local result, rerr
  while true do
    local n, cerr = count(self) -- after subscribing: no message missed
    if n == nil then
      result, rerr = nil, cerr
      break
    end
    if n <= 0 then
      result = true
      break
    end
    ngx.update_time()
    if deadline and ngx.now() * 1000 >= deadline then
      result, rerr = timed_out(self, wait_ms)
      break
    end
    local woke, werr = client.sub:wait(entry, deadline)
    if woke == nil then
      result, rerr = nil, werr
      break
    end
  end
  client.sub:leave(entry, run)
  return result, rerr
end

function Latch:__tostring() return ("redlease.count_down_latch %q"):format(self.name) end

return Latch
