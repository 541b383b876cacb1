-- What a run does with a hold besides releasing it, as the C core (csrc/core/extend.c,
-- handoff.c): extend and reacquire a fixed-lease hold (one call of the renew script, which sets
-- the lease only where this owner still holds the lock, so neither can revive a hold that is
-- gone), hand a hold off as a token, and release the holds a token names.
local calls = require "redlease.resty.calls"
local runner = require "redlease.resty.runner"
local validity = require "redlease.resty.validity"

local ops = {}
local MAX_LEASE_MS = 2 ^ 40

local function now_ms()
  ngx.update_time()
  return ngx.now() * 1000
end

local function not_owned(l)
  return nil, ('not_owned: lock "%s" is not held by this context'):format(l._shown)
end

local function lost(l, reason, what)
  return nil, ('lost: the hold of lock "%s" was lost%s (%s)'):format(l._shown, what, reason)
end

-- The calling run's live hold -> hold | nil, err
local function live_hold(l)
  local hold = l:_hold()
  if not hold or hold.count <= 0 then return not_owned(l) end
  if hold.lost then return lost(l, hold.lost, " while held") end
  return hold
end

local function fixed_hold(l)
  local hold, err = live_hold(l)
  if not hold then return nil, err end
  if hold.watchdog then
    return nil, ('argument: lock "%s" is held in watchdog mode, which renews its lease itself: '
      .. "extend and reacquire are for holds taken with a fixed lease"):format(l._shown)
  end
  return hold
end

-- Sets the hold's lease in Redis to lease_ms from now, where this owner still holds it.
local function set_lease(l, hold, lease_ms, what)
  local client = l._core
  local sent_at = now_ms()
  local replies, err = runner.run(client, { { "renew", 1, l.name, lease_ms, hold.field,
    hold.read_holds or "" } }, true)
  if not replies then return nil, err end
  local r = replies[1]
  local answer = type(r) == "table" and #r == 1 and r[1]
  if type(answer) ~= "number" then return nil, "server: unexpected answer to a lease change" end
  if answer == 1 and client.holds[hold.key] == hold and not hold.lost then
    validity.confirmed(hold, sent_at, lease_ms)
    return true
  end
  local reason = answer == 2 and "owner_changed"
    or (now_ms() >= hold.confirmed_until and "expired" or "deleted")
  if hold.count > 0 then
    client:hold_lost(hold, reason)
    reason = hold.lost
  end
  return lost(l, reason, what)
end

-- add_ms more than the lease left (replace: add_ms from now) -> true | nil, err
function ops.extend(l, add_ms, replace)
  local ok, err = l._core:ready("extend")
  if not ok then return nil, err end
  if add_ms > MAX_LEASE_MS then
    return nil, "argument: an extension must be from 1 ms to 2^40 ms"
  end
  local hold
  hold, err = fixed_hold(l)
  if not hold then return nil, err end
  local left = 0
  if not replace then -- read just before: the new end is late by at most a round trip
    left, err = runner.command(l._core, { "PTTL", l.name })
    if left == nil then return nil, err end
  end
  return set_lease(l, hold, math.min(add_ms + math.max(left, 0), MAX_LEASE_MS),
    " before it was extended")
end

-- The hold's own lease again from now -> true | nil, err
function ops.reacquire(l)
  local ok, err = l._core:ready("reacquire")
  if not ok then return nil, err end
  local hold
  hold, err = fixed_hold(l)
  if not hold then return nil, err end
  return set_lease(l, hold, hold.lease_ms, " before it was reacquired")
end

-- The calling run's hold becomes a token (its Redis field, "<client id>:<run>", ":write" on a
-- write lock) and is let go of here: no more renewal, its guards close without releasing, and
-- the end of the run releases nothing. -> token | nil, err
function ops.hand_off(l)
  local ok, err = l._core:ready("hand_off")
  if not ok then return nil, err end
  local hold
  hold, err = live_hold(l)
  if not hold then return nil, err end
  if hold.release_failed or hold.releasing then
    return nil, ('argument: lock "%s" has a release pending: release it first'):format(l._shown)
  end
  l._core:forget_hold(hold)
  for i = #hold.guards, 1, -1 do hold.guards[i]:_forget() end
  return hold.field
end

-- "<36-character UUID>:<digits>", plus ":write" exactly when the lock is a write lock.
local HEX = "%x"
local TOKEN = "^" .. HEX:rep(8) .. "%-" .. HEX:rep(4) .. "%-" .. HEX:rep(4) .. "%-" .. HEX:rep(4)
  .. "%-" .. HEX:rep(12) .. ":%d+$"

local function token_fits(l, token)
  local body = token
  if l.kind == "write" then
    if token:sub(-6) ~= ":write" then return false end
    body = token:sub(1, -7)
  end
  return body:match(TOKEN) ~= nil
end

-- Releases every hold of the owner `token` names -> true | nil, err
function ops.release_token(l, token)
  if not token_fits(l, token) then
    return nil, ('argument: not a hand-off token of a %s lock ("<client id>:<context>%s")')
      :format(l.kind == "write" and "write" or "non-write", l.kind == "write" and ":write" or "")
  end
  local client = l._core
  local ok, err = client:ready("release_token")
  if not ok then return nil, err end
  local lease = client.watchdog_ms -- kept only while holds remain
  local reply, latch = calls.release(l, token, lease, client:request_id())
  if reply == nil then return nil, latch end
  client:delete_latch(latch)
  if type(reply) ~= "number" then
    return nil, ('not_owned: lock "%s" is not held by the token\'s owner (released already, '
      .. "expired, or not a token of this lock)"):format(l._shown)
  end
  if reply == 0 then -- the owner had re-entered it: every hold of the token goes
    local n, ferr = calls.release_fully(l, token, lease)
    if n == nil then return nil, ferr end
  end
  return true
end

return ops
