-- A lock of any Redisson kind (kind: "lock", "fenced", "fair", "read", "write") on one name of
-- one client. Holds belong to the coroutine that takes
-- them: the same coroutine re-entering adds a hold, another coroutine never shares it.
local args = require "redlease.args"
local Guard = require "redlease.guard"
local holds = require "redlease.holds"
local methods = require "redlease.methods"
local with = require "redlease.with"

local Lock = {}
Lock.__index = Lock

-- key: one per (client, kind, name), whichever lock object of them is used.
function Lock.new(client, core_lock, name, key, kind)
  return setmetatable({ client = client, name = name, kind = kind, _core = core_lock, _key = key },
    Lock)
end

-- A guard for the hold just taken; on a fenced lock it carries the hold's token.
function Lock:_guard(hold)
  local g = Guard.new(hold, self._key, self.client)
  if self.kind == "fenced" then g.token = self._core:token() end
  return g
end

-- acquire{timeout = seconds (nil: forever, 0: one try), lease = seconds (nil: watchdog),
--         max_hold = seconds (nil: the client's, false: none)}
-- -> guard | nil, err ("timeout: ...", "lost: ...", "connection: ...", ...).
function Lock:acquire(opts)
  return self:_acquire(args.acquire("acquire", opts))
end

-- As acquire, but a failure raises its error (a string, "timeout: ..." and the rest) instead of
-- answering nil: `local g <close> = lock:guard{timeout = 5}` can never run its block without
-- the lock, as `local g <close> = lock:acquire{...}` does when it answers nil.
function Lock:guard(opts)
  local g, err = self:_acquire(args.acquire("guard", opts))
  if not g then error(err, 0) end
  return g
end

-- acquire with its options read: -> guard | nil, err.
function Lock:_acquire(lease_ms, wait_ms, max_hold)
  local hold, err = self._core:acquire(lease_ms, wait_ms, max_hold)
  if not hold then return nil, err end
  return self:_guard(hold)
end

-- Releases one hold of the running coroutine (the newest guard it has of this lock).
function Lock:release()
  local g = holds.newest(self._key)
  if g then return g:release() end
  return self._core:release() -- no guard here: the core answers ("not_owned: ...")
end

-- Acquires, calls fn(...), releases; returns fn's results (redlease/with.lua).
Lock.with = with.lock

-- Server-side queries, one round trip each: value, or nil and an error.
function Lock:locked() return self._core:locked() end
function Lock:held() return self._core:held() end
function Lock:hold_count() return self._core:hold_count() end
function Lock:force_unlock() return self._core:force_unlock() end

-- Seconds of lease left; false when not locked, math.huge when the key has no expiry.
function Lock:remaining()
  local ms, err = self._core:remaining()
  if not ms then return nil, err end
  if ms == -2 then return false end
  if ms == -1 then return math.huge end
  return ms / 1000
end

-- Local state, no round trip: true and the reason ("expired", "deleted", "owner_changed",
-- "failover", "unreachable", "max_hold") when the running coroutine's hold was lost while held;
-- else false.
function Lock:lost() return self._core:lost() end

-- Fenced locks: the token of the running coroutine's latest acquire while it holds the lock,
-- else nil. Local state, no round trip.
function Lock:token() return self._core:token() end

-- Seconds for which the running coroutine's hold is still guaranteed on this host's clock: from
-- when its last confirmed acquire or renewal was sent, its lease less the drift margin (0 when
-- it holds nothing guaranteed). No round trip.
function Lock:valid_for() return self._core:valid_for() end

-- true while the hold is in doubt: a renewal failed or is late; it may still be valid.
function Lock:in_doubt() return self._core:in_doubt() end

-- A guard before a critical write: the seconds left when the hold is held and guaranteed for
-- at least opts.min_left seconds (default 0); else nil and "in_doubt: ...", "lost: ..." or
-- "not_owned: ...". No round trip.
function Lock:check(opts)
  return self._core:_check(args.check(opts))
end

-- Fixed-lease holds of the running coroutine (redis-py's extend/reacquire): extend(seconds,
-- {replace = true}) adds to the lease left (replace: sets it); reacquire() gives the hold its
-- own lease again. true, or nil and an error ("argument: ..." in watchdog mode, "not_owned: ...",
-- "lost: ..." when Redis no longer has it).
function Lock:extend(seconds, opts)
  local ms = args.seconds("extend", "seconds", seconds)
  if opts ~= nil and type(opts) ~= "table" then
    args.misuse("bad argument #2 to 'extend' (table expected, got " .. type(opts) .. ")")
  end
  return self._core:extend(ms, opts and opts.replace or false)
end
function Lock:reacquire() return self._core:reacquire() end

-- Who holds it, from Redis: a list of {client_id, context, count, lease, write, local, field,
-- name} (name: the holder's client_name, else "<host>:<pid>"; nil when unknown).
function Lock:owner()
  local found, err = self.client._core:inspect(self.name)
  if not found then return nil, err end
  return found.owners
end

-- Hand-off: the running coroutine's hold becomes a token ("<client id>:<context>") and is let go
-- of here (its renewal stops, its guards close without releasing); any coroutine, thread or
-- process then frees it with lock:release_token(token) (Python: lock.release(token=...)).
-- token, or nil and "not_owned: ..." when this coroutine holds none.
function Lock:hand_off()
  local token, err = self._core:hand_off()
  if not token then return nil, err end
  for _, g in ipairs(holds.take_all(self._key)) do g:_detach() end
  return token
end

-- Releases every hold of the owner a hand-off token names (Lock.hand_off in Python, or any
-- "<client id>:<context>" owner of this lock): true, or nil and "not_owned: ..." when that owner
-- holds none.
function Lock:release_token(token)
  args.string("release_token", "token", token)
  return self._core:release_token(token)
end

function Lock:__tostring()
  return ("redlease.%s %q"):format(self.kind, self.name)
end

methods.wrap(Lock, "lock", function(self) return self.client end)

return Lock
