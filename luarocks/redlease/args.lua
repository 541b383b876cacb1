-- Argument checks for the public API. Misuse raises an error that names the argument; durations
-- are seconds here and whole milliseconds for the core.
local args = {}

local floor, huge = math.floor, math.huge

local function describe(v)
  if v ~= v then return "nan" end -- printed "-nan" or "nan" depending on the interpreter
  return type(v) == "number" and tostring(v) or type(v)
end

-- Checks one duration; returns its milliseconds (rounded up, so a positive one stays positive)
-- or nil and the complaint. `positive`: zero refused; `infinite`: math.huge allowed (ms -1).
local function duration(v, positive, infinite)
  if type(v) ~= "number" or v ~= v then
    return nil, "number of seconds expected, got " .. describe(v)
  end
  if v == huge and infinite then return -1 end
  if v < 0 or (positive and v == 0) or v == huge then
    return nil, (positive and "positive" or "non-negative") .. " number of seconds expected, got "
      .. describe(v)
  end
  local ms = -floor(-v * 1000)
  if ms > 2^53 then return nil, "too large: " .. describe(v) end
  return ms
end

-- A count (sync_replicas): a whole number from 0.
local function count(v)
  if type(v) ~= "number" or v ~= v or v < 0 or v > 1000 or floor(v) ~= v then
    return nil, "whole number from 0 to 1000 expected, got " .. describe(v)
  end
  return v
end

-- A whole number from `min` to 2^53 (permits, a latch's count).
local function whole(v, min)
  if type(v) ~= "number" or v ~= v or floor(v) ~= v or v < min or v > 2^53 then
    return nil, ("whole number from %.0f expected, got %s"):format(min, describe(v))
  end
  return v
end

-- Reads an options table against spec (name -> {positive, infinite, min_ms, none, count, whole,
-- text, flag, fraction}); returns name -> ms (a count for `count`, the number for `whole`, the
-- string for `text`, the boolean for `flag`, parts per million for `fraction` (its largest
-- value), -1 for false where `none`; nil when absent) or nil and the complaint.
local function options(opts, spec)
  if opts == nil then return {} end
  if type(opts) ~= "table" then return nil, "options", "table expected, got " .. type(opts) end
  for k in pairs(opts) do
    if spec[k] == nil then return nil, tostring(k), "unknown option" end
  end
  local out = {}
  for name, s in pairs(spec) do
    local v = opts[name]
    if v == false and s.none then
      out[name] = -1 -- false: none (no cap)
    elseif s.text and v ~= nil then
      if type(v) ~= "string" or v == "" then
        return nil, name, "non-empty string expected, got " .. describe(v)
      end
      out[name] = v
    elseif s.flag and v ~= nil then
      if type(v) ~= "boolean" then return nil, name, "boolean expected, got " .. describe(v) end
      out[name] = v
    elseif s.fraction and v ~= nil then
      if type(v) ~= "number" or v ~= v or v < 0 or v > s.fraction then
        return nil, name, ("a number from 0 to %g expected, got %s"):format(s.fraction,
                                                                        describe(v))
      end
      out[name] = math.floor(v * 1e6 + 0.5) -- parts per million
    elseif s.whole and v ~= nil then
      local n, why = whole(v, s.whole)
      if not n then return nil, name, why end
      out[name] = n
    elseif s.count and v ~= nil then
      local n, why = count(v)
      if not n then return nil, name, why end
      out[name] = n
    elseif v ~= nil then
      local ms, why = duration(v, s.positive, s.infinite)
      if not ms then return nil, name, why end
      if s.min_ms and ms < s.min_ms then
        return nil, name, ("at least %g seconds expected, got %s"):format(s.min_ms / 1000,
                                                                          describe(v))
      end
      out[name] = ms
    end
  end
  return out
end

-- The folder of the rock's Lua files ("@.../redlease/"), nil when loaded otherwise.
local ROCK = debug.getinfo(1, "S").source:match("^(@.*[/\\])[^/\\]+$")

-- The level, for error() called by the function that calls this one, of the first caller
-- outside the rock (a misuse is that caller's): the rock's own functions (and the method
-- checks of redlease/methods.lua) sit between it and the check.
local function caller_level()
  if not ROCK then return 4 end -- raise <- args.* <- the API function <- its caller
  local level = 3 -- 1: this function, 2: the one raising
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 0 end
    if info.what ~= "C" and info.what ~= "tail" and info.source:sub(1, #ROCK) ~= ROCK then
      return level - 1
    end
    level = level + 1
  end
end

-- Raises message at the first caller outside the rock.
function args.misuse(message)
  error(message, caller_level())
end

local function raise(fname, name, why)
  error(("bad argument '%s' to '%s' (%s)"):format(name, fname, why), caller_level())
end

-- The spec of connect's options, from the core's options catalogue (rows of name, kind,
-- default, min, max, ...: core.options, or its copy generated for the OpenResty backend): each
-- kind is checked and converted here, its bounds beyond that by the core (or the backend).
local function connect_spec(catalogue)
  local spec = {}
  for _, row in ipairs(catalogue) do
    if not row.internal then
      local s = {}
      if row.kind == "ms" then
        s.positive = row.min > 0 or row.zero_none -- 0 as "none" is the default, not a value
        if row.min > 1 then s.min_ms = row.min end
      elseif row.kind == "count" then
        s.count = true
      elseif row.kind == "ppm" then
        s.fraction = row.max / 1e6
      elseif row.kind == "text" or row.kind == "path" then
        s.text = true
      elseif row.kind == "flag" then
        s.flag = true
      end
      spec[row.name] = s
    end
  end
  return spec
end

local specs = setmetatable({}, { __mode = "k" })

-- connect(url, opts, catalogue): returns the options (durations in ms, fractions in ppm), or
-- nil, the argument's name and what is wrong with it (connect answers every failure).
function args.connect(url, opts, catalogue)
  if type(url) ~= "string" then return nil, "url", "string expected, got " .. type(url) end
  specs[catalogue] = specs[catalogue] or connect_spec(catalogue)
  return options(opts, specs[catalogue])
end

-- The option a refusal of connect's options names ("watchdog_timeout must be ..."): its first
-- word when that is an option of the catalogue; else nil.
function args.refused_option(why, catalogue)
  local first = why:match("^([%w_]+)[ :]")
  for _, row in ipairs(catalogue) do
    if row.name == first then return first end
  end
end

-- lock:check(opts): returns min_left in ms.
function args.check(opts)
  local o, name, why = options(opts, { min_left = {} })
  if not o then raise("check", name, why) end
  return o.min_left or 0
end

local ACQUIRE = {
  timeout = { infinite = true },
  lease = { positive = true },
  max_hold = { positive = true, none = true },
}

-- acquire(opts) / with(fn, opts): returns lease_ms (-1: watchdog), wait_ms (-1: forever) and
-- max_hold_ms (nil: the client's, -1: none).
function args.acquire(fname, opts)
  -- the common case, timeout and lease that are valid, read without building a table (a lock
  -- per request calls this on every request); anything else takes the general path and its errors
  if type(opts) == "table" and opts.max_hold == nil then
    local known = true
    for k in pairs(opts) do
      if ACQUIRE[k] == nil then
        known = false
        break
      end
    end
    local t, l = opts.timeout, opts.lease
    local wait_ms = t == nil and -1 or duration(t, false, true)
    local lease_ms = l == nil and -1 or duration(l, true, false)
    if known and wait_ms and lease_ms then return lease_ms, wait_ms, nil end
  end
  local o, name, why = options(opts, ACQUIRE)
  if not o then raise(fname, name, why) end
  return o.lease or -1, o.timeout or -1, o.max_hold
end

-- A name: any non-empty string (bytes). `fname`: the constructor, for the message.
function args.name(name, fname)
  fname = fname or "lock"
  if type(name) ~= "string" then raise(fname, "name", "string expected, got " .. type(name)) end
  if name == "" then raise(fname, "name", "must not be empty") end
  return name
end

-- A whole-number argument (permits, a count): from `min` to 2^53.
function args.whole(fname, name, v, min)
  local n, why = whole(v, min)
  if not n then raise(fname, name, why) end
  return n
end

-- A positive number of seconds (a lease) -> whole milliseconds.
function args.seconds(fname, name, v)
  local ms, why = duration(v, true, false)
  if not ms then raise(fname, name, why) end
  return ms
end

-- A string argument (a permit id).
function args.string(fname, name, v)
  if type(v) ~= "string" then raise(fname, name, "string expected, got " .. type(v)) end
  return v
end

local WAIT = { timeout = { infinite = true } }

-- wait(fname, opts): {timeout = seconds (nil: forever)} -> wait_ms (-1: forever).
function args.wait(fname, opts)
  local o, name, why = options(opts, WAIT)
  if not o then raise(fname, name, why) end
  return o.timeout or -1
end

local PERMITS = { timeout = { infinite = true }, permits = { whole = 0 } }

-- Semaphores: {permits = n (default 1), timeout = seconds} -> permits, wait_ms.
function args.permits(fname, opts)
  local o, name, why = options(opts, PERMITS)
  if not o then raise(fname, name, why) end
  return o.permits or 1, o.timeout or -1
end

local PERMIT = {
  timeout = { infinite = true },
  lease = { positive = true },
  watchdog = { flag = true },
}

-- Permit-expirable semaphores: {lease = seconds | watchdog = true, timeout = seconds} ->
-- lease_ms (-1: watchdog), wait_ms. One of lease and watchdog is required.
function args.permit(fname, opts)
  local o, name, why = options(opts, PERMIT)
  if not o then raise(fname, name, why) end
  if (o.lease ~= nil) == (o.watchdog == true) then
    raise(fname, "lease", "a lease in seconds, or watchdog = true, expected (one of them)")
  end
  return o.lease or -1, o.timeout or -1
end

function args.callable(fname, fn)
  local t = type(fn)
  if t == "function" then return fn end
  local mt = (t == "table" or t == "userdata") and getmetatable(fn)
  if type(mt) == "table" and mt.__call then return fn end
  raise(fname, "fn", "function expected, got " .. t)
end

return args
