"""The Lua rock's API inside nginx: reentrancy, queries, guards, light threads as owners of their
own, fencing tokens, read/write sharing, force unlock reported as a loss, `with`; a guard taken
in access_by_lua and released in content_by_lua; fair locks served in arrival order across
requests; the client's id differs per worker."""

import socket
import threading
import time

from conftest import fields, lost
from testkit import Raw, wait_for


def test_lock_api_in_one_request(server, make_nginx):
    ng = make_nginx(errors=[lost("api", "deleted")])  # the force_unlock check
    r = fields(ng.get("/api?name=api")[1])
    assert r == {
        "hold_count": "2", "held": "true", "locked": "true", "remaining_ok": "true",
        "thread": "timeout,not_owned", "release1": "true", "release1_again": "true",
        "released_flag": "true", "count_after": "1", "release2": "true", "g1_released": "true",
        "not_owned": "not_owned", "remaining_free": "false", "tokens": "true",
        "token_after": "nil", "rw_thread": "read,timeout", "read_locked": "true",
        "forced": "true", "after_force": "lost:deleted", "with_result": "5",
        "with_error": "true"}, r


def test_reacquire_after_a_release_that_woke_a_subscriber_gives_way_for_the_grace(server, raw,
                                                                                 make_nginx):
    """As the C core's clients: a release whose message reached a subscriber makes this client's
    next waiting acquire of the lock leave it to the woken waiter first (docs/semantics.md,
    "Fairness of the plain lock"). The subscriber here is a bare connection that never takes the
    lock, so the acquire gives way for the whole grace, then takes it; with 0 it takes it at
    once. A grace over 1 s is refused, with the core's words, and so is a watchdog timeout
    over the core's bound."""
    subscriber = Raw(server.url)
    subscriber("SUBSCRIBE", "redisson_lock__channel:{give-way}")
    ng = make_nginx()
    try:
        slow = fields(ng.get("/reacquire?name=give-way&grace=0.5")[1])
        quick = fields(ng.get("/reacquire?name=give-way&grace=0")[1])
    finally:
        subscriber.close()
    for r in (slow, quick):
        assert r["acquired"] == "true" and r["released"] == "true", r
        assert r["over_bound"] == "handover_grace must be from 0 to 1000 ms", r
        # every bound of the core holds here too, named as the C rock names it
        assert r["lease_over_bound"] == "watchdog_timeout", r
    assert float(slow["took"]) >= 0.4, slow
    assert float(quick["took"]) < 0.4, quick


def test_reacquire_leaves_the_lock_to_a_woken_waiter_of_the_same_client(server, make_nginx):
    """The waiter a release woke may be a run of the releasing client itself: the re-acquire
    that gives way observes the channel without taking that waiter's wake-up, and ends its turn
    at the waiter's own release message, long before a 0.5 s grace; with 0 the releaser takes
    the lock back first."""
    ng = make_nginx()
    for _ in range(5):
        given = fields(ng.get("/handover?name=same-client&grace=0.5")[1])
        assert given["order"] == "B,A" and float(given["took"]) < 0.4, given
    kept = fields(ng.get("/handover?name=same-client&grace=0")[1])
    assert kept["order"] == "A,B", kept


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


def test_connections_name_themselves_as_the_core_s_do(server, raw, make_nginx):
    """client_name (else "<host>:<pid>", the worker's pid) in CLIENT SETNAME
    redlease:<client id>:<name> on each connection, as the C core names its own; bad names are
    refused with the core's words."""
    ng = make_nginx()
    for given in ("edge-1", ""):
        seen = {}

        def call(given=given, seen=seen):
            seen.update(fields(ng.get(f"/named?name=named-{given or 'plain'}&as={given}")[1]))

        t = threading.Thread(target=call)
        t.start()
        assert wait_for(lambda g=given: raw("EXISTS", f"named-{g or 'plain'}") == 1, 5)
        listed = raw("CLIENT", "LIST").decode()
        t.join()
        want = given or f"{socket.gethostname()}:{seen['pid']}"
        assert f" name=redlease:{seen['id']}:{want} " in listed, listed
        assert seen["released"] == "true", seen
        assert seen["spaced"] == ("client_name must be printable ASCII without spaces (as Redis "
                                  "takes in a client name): character 4 is not"), seen
        assert seen["long"] == "client_name must be 1 to 64 characters long", seen


SURFACE = r"""
    location /surface { content_by_lua_block {
      local c = require("app").client
      local function keys(t)
        local out = {}
        for k in pairs(t) do out[#out + 1] = tostring(k) end
        table.sort(out)
        return table.concat(out, ",")
      end
      local mt = debug.getmetatable(c) -- past __metatable
      ngx.say("fields=", keys(c))
      ngx.say("methods=", type(mt.__index) == "table" and keys(mt.__index) or type(mt.__index))
      ngx.say("metatable=", tostring(getmetatable(c)))
      c:id() -- (the identity is made on first use)
      ngx.say("shown=", (tostring(c):gsub("%x+%-[%x%-]+", "UUID")))
      local internals = { "forget_hold", "take_latches", "give_back_latches", "delete_latch",
        "hold_lost", "release_leftover", "ready", "owner_of", "request_id", "holds", "latches",
        "sub", "ep", "takebacks", "counters", "new", "public", "of" }
      local reached = {}
      for _, name in ipairs(internals) do
        if c[name] ~= nil then reached[#reached + 1] = name end
      end
      ngx.say("internals=", table.concat(reached, ","))
      local _, err = pcall(c.lock, "orders")
      ngx.say("dot_call=", (tostring(err):gsub("^.-:%d+: ", "")))
      ngx.say("set=", tostring(pcall(function() c.holds = {} end)))
      local l = c:lock("surface")
      ngx.say("lock_client=", tostring(l.client == c))
      local g = assert(l:acquire { timeout = 0 })
      ngx.say("works=", tostring(g:release()))
    } }
"""


def test_the_client_object_shows_only_the_documented_api(server, make_nginx):
    # the rock's documented client methods (docs/lua.md) that this backend has; its internals
    # (the hold table, the latch queue, forget_hold, ...) are not reachable from the object
    ng = make_nginx(locations=SURFACE)
    r = fields(ng.get("/surface")[1])
    assert r == {
        "fields": "",
        "methods": ("close,closed,count_down_latch,fair_lock,fenced_lock,fenced_set,id,lock,"
                    "multi_lock,permit_expirable_semaphore,rw_lock,semaphore,stats"),
        "metatable": "redlease.client", "shown": "redlease.client UUID", "internals": "",
        "dot_call": "bad argument 'self' to 'lock' (a redlease client expected: "
                    "client:lock(...))",
        "set": "false", "lock_client": "true", "works": "true"}, r


def test_syncs_the_backend_cannot_honour_are_refused_not_ignored(server, make_nginx):
    """sync_replicas and sync_aof need the core's WAIT and WAITAOF after each write: refused
    with `unsupported`, never accepted and ignored."""
    ng = make_nginx()
    r = fields(ng.get("/unsupported")[1])
    assert r == {
        "sync_replicas": "unsupported: sync_replicas is not available in the OpenResty backend",
        "sync_aof": "unsupported: sync_aof is not available in the OpenResty backend"}, r
