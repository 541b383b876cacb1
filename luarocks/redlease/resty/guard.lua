-- A guard: one hold taken by lock:acquire(), released once (guard:release(), or lock:release()
-- in the run that took it). It may be released from any coroutine, e.g. taken in access_by_lua
-- and released in content_by_lua through ngx.ctx.
local Guard = {}
Guard.__index = Guard

function Guard.new(lock, hold)
  local g = setmetatable({ _lock = lock, _hold = hold, _open = true }, Guard)
  local stack = hold.guards
  stack[#stack + 1] = g
  return g
end

-- Closes the guard (its hold was released, or its failed release settled by an acquire).
local function forget(self)
  self._open = false
  local stack = self._hold.guards
  for i = #stack, 1, -1 do
    if stack[i] == self then
      table.remove(stack, i)
      break
    end
  end
end

-- true, or nil and an error ("lost: ...", "connection: ..."). Idempotent. After a failure on
-- the network or the server the guard stays open: calling release again retries the same
-- release (same unlock latch); an acquire of the lock by the same run settles it first (and
-- closes this guard once settled).
function Guard:release()
  if not self._open then return true end
  local ok, err, keep = self._lock:_release_one(self._hold, false, self)
  if ok or not keep then forget(self) end
  return ok, err
end

Guard._forget = forget

function Guard:released() return not self._open end

function Guard.__tostring(self)
  return self._open and "redlease.guard (held)" or "redlease.guard (released)"
end

return Guard
