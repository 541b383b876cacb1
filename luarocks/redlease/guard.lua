-- A guard: one hold taken by lock:acquire(), released once, by guard:release(), by leaving a
-- `<close>` scope (Lua 5.4), or by its hold's finalizer once its coroutine is gone.
local holds = require "redlease.holds"
local methods = require "redlease.methods"

local Guard = {}
Guard.__index = Guard

-- clients: the client, or the list of clients, whose events its methods deliver.
function Guard.new(hold, key, clients)
  local g = setmetatable({ _hold = hold, _key = key, _clients = clients }, Guard)
  g._mine = holds.add(key, g)
  return g
end

-- true, or nil and an error ("lost: ...", "connection: ..."). Idempotent. After a network
-- failure the guard stays open and calling release again retries the same release.
function Guard:release()
  local hold = self._hold
  local ok, err = hold:release()
  if not hold:is_open() and self._mine then
    holds.forget(self._mine, self._key, self)
    self._mine = nil
  end
  return ok, err
end

-- Closed without a release: its hold was handed off (lock:hand_off).
function Guard:_detach()
  self._hold:detach()
  self._mine = nil
end

-- Whether its hold was released (or handed off).
function Guard:released()
  return not self._hold:is_open()
end

-- Lua 5.4 `<close>`: a release that fails raises, unless the scope is already leaving with an
-- error of its own (that error is the one worth seeing).
function Guard.__close(self, err)
  local ok, why = self:release()
  if not ok and err == nil then error(why, 0) end
end

function Guard.__tostring(self)
  return self:released() and "redlease.guard (released)" or "redlease.guard (held)"
end

methods.wrap(Guard, "guard", function(self) return self._clients end)

return Guard
