-- busted output for `make test-lua`: a line per test ("ok", "FAIL" with the message, "skip" with
-- its reason) and, at the end, "N passed, N failed[, N skipped]" for this interpreter, also
-- written to $REDLEASE_LUA_COUNTS so that tests/lua/run can add up both interpreters.
return function(_options)
  local busted = require "busted"
  local handler = require("busted.outputHandlers.base")()
  local label = os.getenv("REDLEASE_LUA") or _VERSION
  local shown = {}

  local function say(fmt, ...)
    io.stdout:write(fmt:format(...), "\n")
    io.stdout:flush()
  end

  local function show_error(e)
    if shown[e] then return end
    shown[e] = true
    local msg = e.message
    if type(msg) ~= "string" then msg = require("pl.pretty").write(msg) end
    local t = e.trace or {}
    local where = t.short_src and (t.short_src .. ":" .. (t.currentline or "?")) or ""
    say("FAIL [%s] %s\n     %s %s", label, e.name or "(outside a test)", where,
        (msg:gsub("\n", "\n     ")))
  end

  handler.testEnd = function(element, _parent, status)
    local name = handler.getFullName(element)
    if status == "success" then
      say("ok   [%s] %s", label, name)
    elseif status == "pending" then
      local p = handler.pendings[#handler.pendings]
      local why = p and type(p.message) == "string" and p.message:gsub("^[^:]*:%d+: ", "")
      say("skip [%s] %s: %s", label, name, why or "no reason given")
    elseif status == "failure" then
      show_error(handler.failures[#handler.failures])
    else
      show_error(handler.errors[#handler.errors])
    end
    return nil, true
  end

  handler.suiteEnd = function()
    for _, e in ipairs(handler.errors) do show_error(e) end -- errors outside tests
    local passed, failed = #handler.successes, #handler.failures + #handler.errors
    local skipped = #handler.pendings
    local line = ("%d passed, %d failed"):format(passed, failed)
    if skipped > 0 then line = line .. (", %d skipped"):format(skipped) end
    say("[%s] %s", label, line)
    local file = os.getenv("REDLEASE_LUA_COUNTS")
    if file then
      local f = assert(io.open(file, "a"))
      f:write(("%d %d %d\n"):format(passed, failed, skipped))
      f:close()
    end
    return nil, true
  end

  busted.subscribe({ "test", "end" }, handler.testEnd, { predicate = handler.cancelOnPending })
  busted.subscribe({ "suite", "end" }, handler.suiteEnd)
  return handler
end
