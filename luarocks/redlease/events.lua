-- The core's events (a hold lost, in doubt or confirmed again; renewals failing; holds released
-- for coroutines that ended), told to the user's hooks and to the rock's logger.
--
-- Lua is not thread safe, so the core's watchdog and event threads never call into it: the core
-- queues the events (queue_events), and they are delivered here, on the caller's thread, when
-- the program calls into the client (any method of it or of its locks, semaphores, latches,
-- multi-locks and guards: before the method runs, and after it returns) or calls
-- client:dispatch(). A program that sits in its own work without calling the library hears of a
-- loss at its next call; a loop that wants to hear sooner calls client:dispatch() as it goes.
local take_notes = require("redlease.core").take_notes

local events = {}

local LEVELS = { debug = 1, info = 2, warning = 3, error = 4 }

-- The default logger: warnings and errors to io.stderr, one line each, as Python's logging does
-- for a library's records when the program configured nothing. A lost lock must not go unsaid,
-- and a Lua program has no logging framework the rock could assume.
function events.stderr_logger(level, message)
  if LEVELS[level] and LEVELS[level] >= LEVELS.warning then
    io.stderr:write("redlease: [", level, "] ", message, "\n")
  end
end

-- The module table, whose `logger` field (a function(level, message), or false: nothing) every
-- record goes to. Set by redlease/init.lua.
events.module = { logger = events.stderr_logger }

-- level: "debug", "info", "warning" or "error". A logger that raises is not the program's
-- problem: the record is dropped.
function events.log(level, message)
  local logger = events.module.logger
  if logger then pcall(logger, level, message) end
end

local function call(what, fn, name, ...)
  local ok, err = pcall(fn, name, ...)
  if not ok then
    events.log("error", ('%s callback raised for lock "%s": %s'):format(what, name, tostring(err)))
  end
end

-- One event (redlease.core's table: kind, name, context, reason, holds, message), as Python's
-- redlease/_events.py words it.
local function deliver(client, ev)
  local kind, on_lost, on_state = ev.kind, client._on_lost, client._on_state
  if kind == "renewed" then
    events.log("debug", ("renewed %d hold(s)"):format(ev.holds))
  elseif kind == "renew_failed" then
    events.log("warning", "renewal failed, will retry: " .. ev.message)
  elseif kind == "sync_failed" then
    events.log("warning", "not acknowledged by any replica: " .. ev.message)
  elseif kind == "stray_holds" or kind == "abandoned" then
    events.log("warning", ev.message)
  elseif kind == "in_doubt" and ev.name then
    events.log("warning", ev.message)
    if on_state then call("on_state", on_state, ev.name, "in_doubt", ev.message) end
  elseif kind == "confirmed" and ev.name then
    events.log("warning", ev.message)
    if on_state then call("on_state", on_state, ev.name, "held", ev.message) end
  elseif kind == "lost" and ev.name then
    events.log("error", ('lock "%s" lost while held: %s'):format(ev.name, ev.reason))
    if on_lost then call("on_lost", on_lost, ev.name, ev.reason) end
    if on_state then call("on_state", on_state, ev.name, "lost", ev.reason) end
  end
end

-- Delivers the client's queued events; returns how many. A hook that calls into the library
-- while its events are delivered does not deliver them again (they come after it returns).
function events.dispatch(client)
  if client == nil or client._dispatching then return 0 end
  local notes = take_notes() -- holds the collector released (csrc/lua/hold.c)
  if notes then
    for i = 1, #notes do events.log("warning", notes[i]) end
  end
  local list = client._core:_events()
  if not list then return 0 end
  client._dispatching = true
  for i = 1, #list do
    deliver(client, list[i])
  end
  client._dispatching = false
  return #list
end

return events
