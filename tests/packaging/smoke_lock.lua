-- Run by an installed rock's interpreter: takes a lock on the given server, checks that another
-- coroutine is excluded, and prints the version and what it saw on one line.
--   lua smoke_lock.lua redis://127.0.0.1:PORT/0
local redlease = require "redlease"
local client = assert(redlease.connect(arg[1]))
local lock = client:lock("packaging:smoke")
local guard = assert(lock:acquire { timeout = 0 })
local other = coroutine.wrap(function() return lock:acquire { timeout = 0 } end)()
assert(guard:release())
local again = assert(lock:acquire { timeout = 0 })
assert(again:release())
client:close()
print(redlease._VERSION, other == nil and "excluded" or "not-excluded", "released")
