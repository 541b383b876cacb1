-- `<close>` guards: Lua 5.4 only; elsewhere each test is reported skipped with the reason.
local helper = require "helper"

describe("<close> guards", function()
  local fx = helper.fixture()
  local tests
  if helper.has_close then
    tests = assert(loadfile("close54.lua", "t", _ENV))()(fx) -- _ENV: busted's, with its assert
  else
    tests = {}
    for _, name in ipairs({
      "a <close> guard releases when its scope ends normally",
      "a <close> guard releases when its scope ends with an error, which goes on",
      "a <close> guard whose hold was lost raises \"lost\" after the body",
      "a <close> guard released inside its scope does nothing more",
      "os.exit(code, true) inside a <close> scope releases the lock",
      "a <close> semaphore guard gives its permits back; a multi-lock guard releases all",
      "a <close> on acquire's nil answer runs its block without the lock; guard raises",
    }) do
      tests[name] = function()
        pending(helper.interpreter .. " has no <close> variables (Lua 5.4 only)")
      end
    end
  end
  before_each(function() if helper.has_close then fx.setup() end end)
  after_each(function() if helper.has_close then fx.teardown() end end)
  local names = {}
  for name in pairs(tests) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do it(name, tests[name]) end
end)
