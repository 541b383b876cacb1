-- Every public method of the rock's objects goes through here, which
-- - refuses a call with a dot instead of a colon (lock.acquire{...}) with a message that says so,
--   rather than "attempt to index a nil value" from deep inside;
-- - delivers the client's queued events (redlease/events.lua) before the method runs and after
--   it returns, so that on_lost and the logger hear of a loss at the program's next call.
local events = require "redlease.events"

local methods = {}

local function misuse(what, name, first)
  local shape = type(first) == "table" and "{...}" or "(...)"
  -- level 3: misuse <- the method's wrapper <- the caller
  error(("bad argument #1 to '%s' (use %s:%s%s, not %s.%s%s)"):format(name, what, name, shape,
    what, name, shape), 3)
end

-- Wraps the public methods (functions not starting with "_", and not `new`) of class, whose
-- objects have it as metatable. what: the object's word in the message ("lock");
-- clients(self): the client, or a list of clients, whose events to deliver (nil: none);
-- checked_only: names of methods that get the check but deliver nothing themselves.
function methods.wrap(class, what, clients, checked_only)
  local function dispatch(self)
    local c = clients and clients(self)
    if c == nil then return end
    if c._core then return events.dispatch(c) end
    for i = 1, #c do events.dispatch(c[i]) end
  end
  local function after(self, ...)
    dispatch(self)
    return ...
  end
  for name, fn in pairs(class) do
    if type(fn) == "function" and name:sub(1, 1) ~= "_" and name ~= "new" then
      if checked_only and checked_only[name] then
        class[name] = function(self, ...)
          if getmetatable(self) ~= class then misuse(what, name, self) end
          return fn(self, ...)
        end
      else
        class[name] = function(self, ...)
          if getmetatable(self) ~= class then misuse(what, name, self) end
          dispatch(self)
          return after(self, fn(self, ...))
        end
      end
    end
  end
  return class
end

return methods
