-- The Redis keys and channels of a lock, in Redisson's format (as csrc/core/lock_calls.c).
local keys = {}

-- prefix(p, name): "p:{name}", or "p:name" when the name already has a hash tag.
local function prefixed(p, name)
  if name:find("{", 1, true) then return p .. ":" .. name end
  return p .. ":{" .. name .. "}"
end
keys.prefixed = prefixed

-- The keys of a lock of `kind` ("lock", "fenced", "fair", "read", "write") on `name`.
function keys.of(kind, name)
  local rw = kind == "read" or kind == "write"
  local k = {
    name = name,
    channel = prefixed(rw and "redisson_rwlock" or "redisson_lock__channel", name),
    latch_prefix = prefixed("redisson_unlock_latch", name) .. ":",
  }
  if kind == "fenced" then
    k.token = prefixed("redisson_lock_token", name)
  elseif kind == "fair" then
    k.queue = prefixed("redisson_lock_queue", name)
    k.deadlines = prefixed("redisson_lock_timeout", name)
  elseif rw then
    k.base = name:find("{", 1, true) and name or "{" .. name .. "}"
  end
  return k
end

-- The hash field of `owner`: owner, or owner .. ":write" on the write side.
function keys.field(kind, owner)
  return kind == "write" and owner .. ":write" or owner
end

-- Read side: the prefix of the owner's read-hold keys (prefix:1 .. prefix:count).
function keys.read_holds(kind, k, owner)
  if kind ~= "read" then return nil end
  return k.base .. ":" .. owner .. ":rwlock_timeout"
end

-- The channel a waiter of `owner` listens on (a fair waiter has its own).
function keys.wait_channel(kind, k, owner)
  if kind == "fair" then return k.channel .. ":" .. owner end
  return k.channel
end

-- For messages: the name cut at 60 bytes, unprintable bytes as '?'.
function keys.shown(name)
  if #name <= 60 and not name:find("[^\32-\126]") then return name end -- (no copy made)
  local s = name:sub(1, 60):gsub("[^\32-\126]", "?")
  return #name > 60 and s .. "..." or s
end

return keys
