-- One Lua client process of a safety run (lua5.4, the rock): the Lua twin of worker.py.
-- `lua5.4 worker.lua CONFIG.lua`, CONFIG a chunk that returns the table run.py writes (the same
-- keys as worker.py's JSON). Its owners are coroutines of one client (a hold belongs to
-- (client, coroutine)), run by a small scheduler: a waiting acquire blocks the OS thread and so
-- every coroutine, so an owner acquires with one try at a time (timeout 0) and yields between
-- tries, as it yields while it holds and while it "works". It logs the events of history.py on
-- the same clock (CLOCK_MONOTONIC in ns, lua-system's monotime) as one JSON line per write.
-- Fenced and unfenced writes go to PostgreSQL through LuaSQL (Debian's lua-sql-postgres).

local system = require "system"
local redlease = require "redlease"

local cfg = dofile(arg[1])

local function now()
  return math.floor(system.monotime() * 1e9)
end

-- JSON of a flat event: strings, integers, floats, booleans; nil fields are left out.
local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function encode(kind, fields)
  local parts = { '"kind": ' .. quote(kind) }
  local keys = {}
  for k in pairs(fields) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v, out = fields[k]
    if math.type(v) == "integer" then
      out = string.format("%d", v)
    elseif type(v) == "number" then
      out = string.format("%.17g", v)
    elseif type(v) == "boolean" then
      out = tostring(v)
    else
      out = quote(tostring(v))
    end
    parts[#parts + 1] = quote(k) .. ": " .. out
  end
  return "{" .. table.concat(parts, ", ") .. "}\n"
end

local out = assert(io.open(cfg.out, "a"))
out:setvbuf("no") -- one write per line: whole lines even if the process is killed
local function log(kind, fields)
  out:write(encode(kind, fields))
end

local function pid()
  local f = assert(io.open("/proc/self/stat"))
  local n = tonumber(f:read("l"):match("^(%d+)"))
  f:close()
  return n
end

local rng_state = 0
for c in (cfg.seed .. ":" .. cfg.proc):gmatch(".") do rng_state = (rng_state * 31 + c:byte()) end
math.randomseed(rng_state)
local function uniform(span)
  return span[1] + (span[2] - span[1]) * math.random()
end

-- Yields to the scheduler until monotonic time `t` (ns).
local function sleep_until(t)
  coroutine.yield(t)
end

local function pause_ms(span)
  sleep_until(now() + math.floor(uniform(span) * 1e6))
end

local opts = {}
for k, v in pairs(cfg.options) do opts[k] = v end
opts.on_lost = function(name, reason)
  -- delivered on this thread at the next call into the client (the scheduler dispatches at
  -- every round): the time the program learned it
  log("lost", { proc = cfg.proc, lock = name, t = now(), reason = reason })
end
opts.on_state = function(name, state, why)
  -- "in_doubt", "held" or "lost", delivered like on_lost
  log("state", { proc = cfg.proc, lock = name, t = now(), state = state,
    why = tostring(why):sub(1, 200) })
end
local client = assert(redlease.connect(cfg.url, opts))
log("hello", { proc = cfg.proc, client_id = client:id(), pid = pid(), lang = "lua" })

local function code_word(err)
  return tostring(err):match("^(%w+):") or tostring(err)
end

-- Holds of this process now: a wait blocks every coroutine, so an owner waits only while no
-- sibling holds a lock (a held lock's release would wait behind it, and a sibling holding the
-- same lock could not release it at all).
local held_here = 0

-- A waiting acquire of up to `timeout` s made of short waits (20 ms, on Redis's notification
-- like any waiter) or, while a sibling holds a lock, one-try acquires; between them the owner
-- yields. nil on a timeout, nil and the error on any
-- other failure (as worker.py's acquire raising).
local function acquire(lock, timeout)
  local deadline = now() + math.floor(timeout * 1e9)
  while true do
    local wait = held_here > 0 and 0 or 0.02
    local guard, err = lock:acquire({ timeout = wait })
    if guard then
      held_here = held_here + 1
      return guard
    end
    if code_word(err) ~= "timeout" then return nil, err end
    if now() >= deadline then return nil end
    sleep_until(now() + (wait == 0 and 5000000 or 0))
  end
end

local db_env
local function db_connect()
  db_env = db_env or require("luasql.postgres").postgres()
  -- LuaSQL hands its source to PQsetdbLogin, which takes a whole conninfo string
  return assert(db_env:connect(cfg.pg))
end

local function sql(s, ...)
  return string.format(s, ...)
end

local function increment(db, owner, lock_name, mode, token)
  local t0 = now()
  local accepted, read, stage = false, nil, "read"
  local row = "'" .. db:escape(lock_name) .. "'"
  local ok, err = pcall(function()
    local cur
    if mode == "fenced" then
      cur = assert(db:execute(sql("UPDATE counters SET fence = %d WHERE id = %s AND fence < %d"
        .. " RETURNING value", token, row, token)))
    else
      cur = assert(db:execute(sql("SELECT value FROM counters WHERE id = %s", row)))
    end
    local got = cur:fetch()
    cur:close()
    if got == nil then return end
    read, stage = math.tointeger(tonumber(got)), "write"
    pause_ms(cfg.hold_ms) -- the work between read and write
    assert(db:execute("BEGIN"))
    local n
    if mode == "fenced" then
      n = db:execute(sql("UPDATE counters SET value = %d WHERE id = %s AND fence = %d",
        read + 1, row, token))
    elseif mode == "fenced-write" then
      n = db:execute(sql("UPDATE counters SET value = %d, fence = %d WHERE id = %s AND fence < %d",
        read + 1, token, row, token))
    else
      n = db:execute(sql("UPDATE counters SET value = %d WHERE id = %s", read + 1, row))
    end
    accepted = n == 1
    if accepted then
      assert(db:execute(sql("INSERT INTO accepted (row_id, token, value) VALUES (%s, %s, %d)",
        row, token and string.format("%d", token) or "NULL", read + 1)))
    end
    assert(db:execute("COMMIT"))
  end)
  if not ok then
    stage = "error:" .. tostring(err):sub(1, 100)
    accepted = false
    pcall(db.execute, db, "ROLLBACK")
  end
  log("write", { proc = cfg.proc, owner = owner, lock = lock_name, row = lock_name, start = t0,
    ["end"] = now(), accepted = accepted, mode = mode, token = token, read = read,
    stage = stage })
end

local function release(guard, owner, lock_name)
  local t2 = now()
  held_here = held_here - 1
  local ok, err = guard:release()
  local reason, error_, detail
  if not ok then
    if code_word(err) == "lost" then
      -- "lost: the hold of lock "<name>" was lost ... (<reason>)"
      reason = tostring(err):match("%(([%w_]+)%)%s*$") or "lost"
    else
      error_, detail = code_word(err), tostring(err):sub(1, 200)
    end
  end
  log("release", { proc = cfg.proc, owner = owner, lock = lock_name, start = t2, ["end"] = now(),
    ok = ok == true, reason = reason, error = error_, detail = detail })
end

local function owner_loop(index, workload, lock_name)
  local owner = "c" .. index
  local db = workload ~= "mutex" and db_connect() or nil
  while now() < cfg.stop_at do
    local lock = (workload == "fenced" or workload == "fenced-write")
      and client:fenced_lock(lock_name) or client:lock(lock_name)
    local t0 = now()
    local guard, err = acquire(lock, cfg.acquire_timeout)
    local t1 = now()
    local token = guard and guard.token or nil
    log("acquire", { proc = cfg.proc, owner = owner, lock = lock_name, start = t0, ["end"] = t1,
      ok = guard ~= nil, token = token, error = err and code_word(err) or nil,
      detail = err and tostring(err):sub(1, 200) or nil })
    if guard then
      if workload == "mutex" then
        local hold_until = t1 + math.floor(uniform(cfg.hold_ms) * 1e6)
        while now() < hold_until and not lock:lost() do
          sleep_until(now() + 5000000)
        end
      elseif not lock:lost() then
        increment(db, owner, lock_name, workload, token)
      end
      release(guard, owner, lock_name)
    end
    pause_ms(cfg.think_ms)
  end
  if db then db:close() end
end

-- The scheduler: each round delivers the client's events, then resumes every owner whose
-- wake-up time has come; it sleeps until the earliest next one (at most 5 ms).
while now() < cfg.start_at do system.sleep(0.01) end
local owners = {}
for i, o in ipairs(cfg.owners) do
  owners[#owners + 1] = { co = coroutine.create(owner_loop), args = { i - 1, o[1], o[2] },
    wake = 0 }
end
while true do
  client:dispatch()
  local alive, earliest = 0, math.huge
  for _, o in ipairs(owners) do
    if coroutine.status(o.co) ~= "dead" then
      if now() >= o.wake then
        local ok, wake
        if o.args then
          ok, wake = coroutine.resume(o.co, table.unpack(o.args))
          o.args = nil
        else
          ok, wake = coroutine.resume(o.co)
        end
        if not ok then error(wake) end
        o.wake = wake or 0
      end
      if coroutine.status(o.co) ~= "dead" then
        alive = alive + 1
        earliest = math.min(earliest, o.wake)
      end
    end
  end
  if alive == 0 then break end
  local wait = math.min(earliest - now(), 5000000)
  if wait > 0 then system.sleep(wait / 1e9) end
end
client:close()
out:close()
