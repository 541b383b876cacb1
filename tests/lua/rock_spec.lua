-- The rock itself: the rockspec compiles every C source in, and the module's surface.
local helper = require "helper"

local ROOT = "../.."

local function rockspec()
  local env = {}
  local chunk
  if setfenv then
    chunk = assert(loadfile(ROOT .. "/luarocks/redlease-scm-1.rockspec"))
    setfenv(chunk, env)
  else
    chunk = assert(loadfile(ROOT .. "/luarocks/redlease-scm-1.rockspec", "t", env))
  end
  chunk()
  return env
end

describe("the rock", function()
  it("compiles every csrc/core (every room) and csrc/lua source into redlease.core", function()
    local listed = {}
    for _, src in ipairs(rockspec().build.modules["redlease.core"].sources) do
      listed[src] = true
    end
    local on_disk = {}
    local find = "cd " .. ROOT .. " && find csrc/core csrc/lua -name '*.c'"
    for path in helper.sh(find):gmatch("[^\n]+") do
      on_disk[path] = true
    end
    assert.same(on_disk, listed)
  end)

  it("installs every Lua module under luarocks/redlease", function()
    local modules = rockspec().build.modules
    for path in helper.sh("cd " .. ROOT .. " && ls luarocks/redlease/*.lua"):gmatch("[^\n]+") do
      local name = path:match("luarocks/(.*)%.lua$"):gsub("/init$", ""):gsub("/", ".")
      assert.equal(path, modules[name], name)
    end
  end)

  it("reports the core's version and loads once per state", function()
    local redlease = require "redlease"
    assert.matches("^%d+%.%d+%.%d+$", redlease._VERSION)
    package.loaded["redlease.core"] = nil
    local again = require "redlease.core"
    assert.equal(redlease._VERSION, again.version)
  end)
end)
