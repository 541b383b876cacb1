-- A cache-stampede guard shared by several nginx hosts: GET /report/<day> serves a report
-- that takes a while to compute and is cached in Redis for 60 s. When it is missing, one
-- request (on whichever host) computes it under a redlease lock; the others, on every host,
-- wait on the lock without blocking their workers, then read what it stored.
local redlease = require "redlease"
local store = require "store"

local report = {}
local client, url, host

-- init_worker_by_lua: one client per worker (no connection yet).
function report.init(redis_url, host_name)
  url, host = redis_url, host_name
  client = assert(redlease.connect(redis_url, { watchdog_timeout = 10 }))
end

local function compute(day)
  store.incr(url, "report:computations") -- the demo counts them
  ngx.sleep(1.5) -- the expensive part (a database query, a remote API...)
  return ("report for %s, computed by host %s (worker %d) at %s"):format(day, host,
    ngx.worker.pid(), ngx.http_time(ngx.time()))
end

function report.serve(day)
  local key = "report:" .. day
  local value = store.get(url, key)
  local how = "cache hit"
  if not value then
    -- one computation at a time across all hosts; the others wait here (up to 10 s)
    local ok, err = pcall(function()
      client:lock("lock:" .. key):with(function()
        value = store.get(url, key) -- filled while we waited?
        if value then
          how = "waited, then read the cache"
        else
          value = compute(day)
          store.set(url, key, value, 60)
          how = "computed"
        end
      end, { timeout = 10 })
    end)
    if not ok then
      ngx.status = 503
      return ngx.say("busy: ", err)
    end
  end
  ngx.header["X-Report"] = how
  ngx.say(value)
end

return report
