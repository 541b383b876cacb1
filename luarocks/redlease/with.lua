-- The shape of every `with`, in the rock and the OpenResty backend alike: take, run the body in
-- pcall, give back; then re-raise the body's error, or raise the giving back's, or return the
-- body's results.
local args = require "redlease.args"

local with = {}

-- The end of a `with` whose taking gave g (g:release() -> true | nil, err).
function with.finish(g, ok, ...)
  local released, err = g:release()
  if not ok then error((...), 0) end -- the body's error, after the release
  if not released then error(err, 0) end
  return ...
end

-- Acquires, calls fn(...), releases; returns fn's results. Raises when the lock cannot be
-- acquired, re-raises fn's error after releasing, and raises when the hold was lost meanwhile.
-- Written in Lua so that fn may yield wherever the host allows it. For any lock whose
-- lock:_acquire(lease_ms, wait_ms, max_hold) answers a guard or nil, err.
function with.lock(lock, fn, opts, ...)
  args.callable("with", fn)
  local g, err = lock:_acquire(args.acquire("with", opts))
  if not g then error(err, 0) end
  return with.finish(g, pcall(fn, ...))
end

return with
