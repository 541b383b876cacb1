-- A cron-style job that must run on one host at a time.
--
-- cron starts this script on every host at the same minute. The first to take the lock runs the
-- job; the others see it taken and exit. The lock is held in watchdog mode: its lease
-- (watchdog_timeout) is renewed in the background for as long as the job works, however long
-- that is, and a host that dies mid-job stops renewing, so the lock frees itself within one
-- watchdog timeout and the next run can go ahead.
--
--   REDIS_URL=redis://127.0.0.1:6379 lua5.4 nightly_report.lua [host-name]
--   (make demo-lua runs several "hosts" against a throwaway server)
local redlease = require "redlease"

local host = arg[1] or os.getenv("HOSTNAME") or "this-host"
local url = os.getenv("REDIS_URL") or "redis://127.0.0.1:6379"
local watchdog = tonumber(os.getenv("REPORT_WATCHDOG") or "30") -- seconds
local steps = tonumber(os.getenv("REPORT_STEPS") or "5")
local step_seconds = tonumber(os.getenv("REPORT_STEP_SECONDS") or "1")

local function log(fmt, ...)
  io.write(("[%s] " .. fmt .. "\n"):format(host, ...))
  io.flush()
end

local function sleep(seconds) os.execute("sleep " .. seconds) end

-- The job itself: long enough that the lease would have run out without the watchdog. It stops
-- if the lock is lost (Redis unreachable for a whole lease, or someone force-unlocked it):
-- another host may be running it by then.
local function build_report(lock)
  for step = 1, steps do
    sleep(step_seconds)
    local lost, reason = lock:lost()
    if lost then error("lost the lock (" .. reason .. "); stopping", 0) end
    log("step %d/%d done; the lock's lease has %.2f s left", step, steps, lock:remaining() or 0)
  end
  return "report.csv"
end

local client = assert(redlease.connect(url, { watchdog_timeout = watchdog }))
local lock = client:lock("cron:nightly-report")

local guard, err = lock:acquire({ timeout = 0 }) -- one try: if another host has it, we are done
if not guard then
  if err:match("^timeout") then
    log("another host is running the job; nothing to do")
    os.exit(0)
  end
  log("cannot take the lock: %s", err)
  os.exit(1)
end

log("took the lock; running the job (lease %g s, renewed every %g s)", watchdog, watchdog / 3)
local ok, result = pcall(build_report, lock)
local released, why = guard:release()
if not ok then
  log("job failed: %s", tostring(result))
  os.exit(1)
end
log("job done: %s", result)
if not released then log("warning: %s", why) end -- e.g. "lost: ...": the run was not exclusive
client:close()
