"""A lock object made per call finds its keys in the worker's cache of names (lock.lua): past
the cache's bound (1000 names of a kind) it starts afresh, and the keys of each name and kind
stay its own: the locks after 1,100 names write their own hashes, fields and fence, and leave
no latch behind."""

from conftest import fields
from testkit import wait_for

NAMES = """
    location = /names { content_by_lua_block {
      local app = require "app"
      local c = app.client
      for i = 1, 1100 do -- every name a new one: past the cache's bound
        local name = "names:" .. i
        local l = i % 2 == 0 and c:fair_lock(name) or c:lock(name)
        assert(assert(l:acquire { timeout = 0, lease = 5 }):release())
      end
      local long = c:lock(("L"):rep(300)) -- (not kept: too long)
      assert(assert(long:acquire { timeout = 0, lease = 5 }):release())
      assert(assert(long:acquire { timeout = 0, lease = 5 }):release())
      local plain, fenced = c:lock("names:1"), c:fenced_lock("names:4")
      local rw = c:rw_lock("names:2")
      local g1 = assert(plain:acquire { timeout = 0, lease = 5 })
      local g2 = assert(fenced:acquire { timeout = 0, lease = 5 })
      local g3 = assert(rw.read:acquire { timeout = 0, lease = 5 })
      local out = {
        plain_held = tostring(plain:held()), plain_count = plain:hold_count(),
        fenced_held = tostring(fenced:held()), token = g2.token,
        read_locked = tostring(rw.read:locked()), write_locked = tostring(rw.write:locked()),
        others = tostring(c:lock("names:3"):locked()),
      }
      assert(g1:release()) assert(g2:release()) assert(g3:release())
      out.released = tostring(not plain:locked() and not fenced:locked() and not rw.read:locked())
      for k, v in pairs(out) do ngx.say(k, "=", v) end
    } }
"""


def test_keys_stay_each_names_own_past_the_cache_bound(server, raw, make_nginx):
    ng = make_nginx(locations=NAMES)
    status, body = ng.get("/names", timeout=120)
    assert status == 200, body
    assert fields(body) == {
        "plain_held": "true", "plain_count": "1", "fenced_held": "true", "token": "1",
        "read_locked": "true", "write_locked": "false", "others": "false",
        "released": "true"}, body
    assert raw("GET", "redisson_lock_token:{names:4}") == b"1"
    assert wait_for(lambda: raw("KEYS", "redisson_unlock_latch*") == [], 5)
    assert raw("KEYS", "names:*") == [] and raw("KEYS", "LLL*") == []
