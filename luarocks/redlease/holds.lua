-- Each coroutine's open guards, per lock: lock:release() releases through the newest one, so a
-- guard never outlives the hold it stands for (its safety net would release a second hold).
-- Weak keys: a collected coroutine takes its guards along, and their holds' finalizers then
-- release what it still held. Nothing here refers to a coroutine except those keys.
local running = require("redlease.core").running

local by_thread = setmetatable({}, { __mode = "k" }) -- coroutine -> { lock key -> {guard...} }
local holds = {}

-- Records an open guard of the running coroutine; returns what holds.forget needs.
function holds.add(key, guard)
  local co = running()
  local mine = by_thread[co]
  if not mine then
    mine = {}
    by_thread[co] = mine
  end
  local stack = mine[key]
  if not stack then
    stack = {}
    mine[key] = stack
  end
  stack[#stack + 1] = guard
  return mine
end

-- Forgets a released guard.
function holds.forget(mine, key, guard)
  local stack = mine[key]
  if not stack then return end
  for i = #stack, 1, -1 do
    if stack[i] == guard then
      table.remove(stack, i)
      break
    end
  end
  if #stack == 0 then mine[key] = nil end
end

-- Takes every open guard of the running coroutine for a lock off its stack (a hand-off: they
-- close without releasing); returns them.
function holds.take_all(key)
  local mine = by_thread[running()]
  local stack = mine and mine[key] or {}
  if mine then mine[key] = nil end
  return stack
end

-- The running coroutine's newest open guard of a lock, or nil.
function holds.newest(key)
  local mine = by_thread[running()]
  local stack = mine and mine[key]
  return stack and stack[#stack]
end

return holds
