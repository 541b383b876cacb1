-- Who holds a lock inside nginx: a *run*, i.e. one coroutine in one request (or one timer
-- callback). nginx reuses a finished request's entry coroutine for the next request, and for the
-- next phase of the same request, so the coroutine alone is not an owner: a run is keyed by
-- (ngx.ctx of its request, coroutine, phase). Each run gets a number, never reused; the wire
-- owner is "<client uuid>:<number>". The run's request and coroutine are kept weakly so that
-- the watchdog can tell when the run is over (owner.ended).
local owner = {}

local get_phase, running, status = ngx.get_phase, coroutine.running, coroutine.status
local NO_REQUEST = {} -- init and exit phases have no request, and so no ngx.ctx

local WEAK_KEYS, WEAK_VALUES = { __mode = "k" }, { __mode = "v" } -- shared: none made per run
local runs = setmetatable({}, WEAK_KEYS) -- ctx -> its request's runs, a list (run.next_run)
local last = 0

local function request_ctx(p)
  if p == "init" or p == "exit_worker" then return NO_REQUEST end
  return ngx.ctx
end

-- The calling run: { id = number, phase =, ref = weak {ctx =, co =}, owner =, owner_uuid = }
-- (owner: its owner string for the client whose id is owner_uuid, client:owner_of). p: the
-- phase, when the caller has it already (client:ready() answers it).
function owner.run(p)
  p = p or get_phase()
  local ctx, co = request_ctx(p), running()
  -- (a request has a few runs, one per coroutine and phase that took a lock: a short list, and
  -- no table per request besides its runs)
  local head = runs[ctx]
  local run = head
  while run and (run.phase ~= p or run.ref.co ~= co) do run = run.next_run end
  if not run then
    last = last + 1
    run = { id = last, phase = p, ref = setmetatable({ ctx = ctx, co = co }, WEAK_VALUES),
      next_run = head or false, owner = false, owner_uuid = false }
    runs[ctx] = run
  end
  return run
end

-- Whether a run is over: the collector freed its request or its coroutine (the request ended:
-- normally, or while the coroutine was suspended: ngx.exit from another thread, a client abort,
-- a shutdown), or its coroutine finished (dead: it returned or raised, here or in a later run
-- that reused it). A run of the rewrite or access phase lives as long as its request instead:
-- its guard may be released in a later phase of the same request (through ngx.ctx).
local LIVES_WITH_REQUEST = { rewrite = true, access = true }

function owner.ended(run)
  local ref = run.ref
  local ctx, co = ref.ctx, ref.co
  if ctx == nil then return true end
  if LIVES_WITH_REQUEST[run.phase] then return false end
  return co == nil or status(co) == "dead"
end

-- This host's name for client names (as the core's conn_name.c: at most 64 characters, any
-- Redis would refuse in a client name shown as "_").
local host
function owner.host()
  if not host then
    local f = io.open("/proc/sys/kernel/hostname", "rb")
    local name = f and f:read("*l")
    if f then f:close() end
    name = (name or ""):sub(1, 64):gsub("[^!-~]", "_")
    host = name ~= "" and name or "unknown-host"
  end
  return host
end

-- Random hex from /dev/urandom (once per worker for the client id; never math.random, whose
-- state every worker inherits from the master).
function owner.random_hex(nbytes)
  local f = io.open("/dev/urandom", "rb")
  local bytes
  if f then
    bytes = f:read(nbytes)
    f:close()
  end
  if not bytes or #bytes ~= nbytes then
    -- no /dev/urandom: the pid and the time, hashed (weaker, still differs per worker)
    bytes = ngx.sha1_bin(ngx.worker.pid() .. ":" .. ngx.now() .. ":" .. tostring({}))
      :sub(1, nbytes)
  end
  return (bytes:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

function owner.uuid()
  local h = owner.random_hex(16)
  -- version 4, variant 10
  local v = ("%x"):format(8 + tonumber(h:sub(17, 17), 16) % 4)
  return ("%s-%s-4%s-%s%s-%s"):format(h:sub(1, 8), h:sub(9, 12), h:sub(14, 16), v,
    h:sub(18, 20), h:sub(21, 32))
end

return owner
