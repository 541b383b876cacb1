"""The Lua rock's API inside nginx: reentrancy, queries, guards, light threads as owners of their
own, fencing tokens, read/write sharing, force unlock reported as a loss, `with`; a guard taken
in access_by_lua and released in content_by_lua; fair locks served in arrival order across
requests; the client's id differs per worker."""

import threading
import time

from conftest import fields
from testkit import wait_for


def test_lock_api_in_one_request(server, make_nginx):
    ng = make_nginx()
    r = fields(ng.get("/api?name=api")[1])
    assert r == {
        "hold_count": "2", "held": "true", "locked": "true", "remaining_ok": "true",
        "thread": "timeout,not_owned", "release1": "true", "release1_again": "true",
        "released_flag": "true", "count_after": "1", "release2": "true", "g1_released": "true",
        "not_owned": "not_owned", "remaining_free": "false", "tokens": "true",
        "token_after": "nil", "rw_thread": "read,timeout", "read_locked": "true",
        "forced": "true", "after_force": "lost:deleted", "with_result": "5",
        "with_error": "true"}, r


PHASES = """
    location /across {
      access_by_lua_block {
        -- taken by a light thread of the access phase, which ends here: the hold lives on
        -- with its request
        local t = ngx.thread.spawn(function()
          ngx.ctx.guard = assert(require("app").client:lock("across"):acquire { timeout = 0 })
        end)
        assert(ngx.thread.wait(t))
      }
      content_by_lua_block {
        local l = require("app").client:lock("across")
        local ok, err = l:release() -- another run would not own it: the guard does
        ngx.sleep(0.5) -- watchdog rounds meanwhile: the access run is over, its request is not
        ngx.say("lock_release=", tostring(ok or err:match("^([%w_]+):")))
        ngx.say("guard_release=", tostring(ngx.ctx.guard:release()))
        ngx.say("locked=", tostring(l:locked()))
      }
    }
"""


def test_guard_released_in_a_later_phase(server, raw, make_nginx):
    ng = make_nginx(locations=PHASES, watchdog=0.6)
    r = fields(ng.get("/across")[1])
    assert r == {"lock_release": "not_owned", "guard_release": "true", "locked": "false"}, r
    assert "was still held" not in ng.log()


def test_fair_lock_in_arrival_order(server, raw, make_nginx):
    ng = make_nginx(workers=2)
    results, threads = {}, []
    holder = threading.Thread(target=lambda: results.update(
        holder=fields(ng.get("/hold?name=queue&kind=fair&secs=1")[1])))
    holder.start()
    assert wait_for(lambda: raw("EXISTS", "queue") == 1, 5)
    for i in range(5):
        t = threading.Thread(target=lambda i=i: results.update(
            {i: fields(ng.get("/hold?name=queue&kind=fair&timeout=20&secs=0.05")[1])}))
        t.start()
        threads.append(t)
        assert wait_for(lambda i=i: raw("LLEN", "redisson_lock_queue:{queue}") == i + 1, 5)
    for t in [holder] + threads:
        t.join(30)
    got = [float(results[i]["got"]) for i in range(5)]
    assert got == sorted(got), got
    assert raw("EXISTS", "redisson_lock_queue:{queue}") == 0


def test_each_worker_has_its_own_client_id(server, make_nginx):
    ng = make_nginx(workers=2)
    ids = {}
    for _ in range(200):
        f = fields(ng.get("/stats")[1])
        ids[f["pid"]] = f["id"]
        if len(ids) == 2:
            break
        time.sleep(0.01)
    assert len(ids) == 2 and len(set(ids.values())) == 2, ids
