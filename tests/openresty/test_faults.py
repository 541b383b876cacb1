"""Faults: Redis down longer than the lease (the holder learns its hold was lost: unreachable),
Redis restarted empty (deleted), and bad arguments and disabled phases in every phase."""

import re
import threading
import time

from conftest import REFUSED, RESET, SUB_LOST, fields, lost
from testkit import wait_for


def hold_in_background(ng, path):
    result = {}
    t = threading.Thread(target=lambda: result.update(fields(ng.get(path, 60)[1])))
    t.start()
    return t, result


def test_redis_down_longer_than_the_lease(server, raw, make_nginx):
    ng = make_nginx(watchdog=1.5, errors=[REFUSED, lost("outage", "unreachable")])
    t, result = hold_in_background(ng, "/hold?name=outage&secs=4")
    assert wait_for(lambda: raw("EXISTS", "outage") == 1, 5)
    server.stop()
    time.sleep(2.5)  # longer than the 1.5 s lease
    server.start()
    t.join(30)
    assert result["lost"] == "true" and result["reason"] == "unreachable", result
    assert "released" not in result and result["release_err"].startswith("lost: "), result
    assert "(unreachable)" in result["release_err"]
    assert 'lost while held: unreachable' in ng.log()


def test_redis_restarted_empty(server, raw, make_nginx):
    ng = make_nginx(watchdog=1.5, errors=[REFUSED, RESET, lost("restart", "deleted")])
    t, result = hold_in_background(ng, "/hold?name=restart&secs=2")
    assert wait_for(lambda: raw("EXISTS", "restart") == 1, 5)
    server.stop()
    server.start()  # same port, no data
    t.join(30)
    assert result["lost"] == "true" and result["reason"] == "deleted", result
    assert result["release_err"].startswith("lost: ") and "(deleted)" in result["release_err"]
    # the worker goes on: a new lock works at once
    assert fields(ng.get("/cycle?name=restart")[1])["ok"] == "true"


PHASES_HTTP = """
  init_by_lua_block { require("app").probe("init", "{redis}") }
"""
PHASES_INIT_WORKER = """
    require("app").probe("init_worker")
    ngx.timer.at(0, function() require("app").probe("timer") end)
"""
PHASES_LOCATIONS = """
    location /phases {
      set_by_lua_block $probe { require("app").probe("set") return "x" }
      rewrite_by_lua_block { require("app").probe("rewrite") }
      access_by_lua_block { require("app").probe("access") }
      content_by_lua_block { require("app").probe("content") ngx.say("done") }
      header_filter_by_lua_block { require("app").probe("header_filter") }
      body_filter_by_lua_block { if ngx.arg[2] then require("app").probe("body_filter") end }
      log_by_lua_block { require("app").probe("log") }
    }
"""


def test_bad_arguments_and_phases(server, raw, make_nginx):
    ng = make_nginx(http=PHASES_HTTP, locations=PHASES_LOCATIONS, errors=["PROBE-"],
                    init_worker_code=PHASES_INIT_WORKER)
    assert ng.get("/phases") == (200, "done\n")
    assert wait_for(lambda: "PROBE-CALL log" in ng.log(), 5)
    log = ng.log()
    yieldable = ["rewrite", "access", "content", "timer"]
    disabled = ["init", "init_worker", "set", "header_filter", "body_filter", "log"]
    for phase in yieldable + disabled:
        args = re.findall(rf"PROBE-ARG {phase} (.*?)(?:, client|, context|$)", log, re.M)
        assert len(args) == 2, (phase, args)
        assert ("bad argument 'timeout' to 'acquire' (number of seconds expected, got string)"
                in args[0])
        assert "bad argument 'name' to 'lock' (string expected, got number)" in args[1]
        call = re.search(rf"PROBE-CALL {phase} (.*?)(?:, client|, context|$)", log, re.M).group(1)
        if phase in yieldable:
            assert call == "acquired", (phase, call)
            assert re.search(rf"PROBE-RELEASE {phase} true", log), phase
        else:
            assert call.startswith(
                f"unsupported: acquire cannot reach Redis in the {phase} phase"), call
    assert "PROBE-RELEASE" not in "".join(
        line for line in log.splitlines() if any(f" {d} " in line for d in disabled))
    assert not [line for line in ng.errors() if "PROBE-" not in line], "no other error"


def test_waiters_survive_a_redis_restart(server, raw, make_nginx):
    # the subscriber reconnects and resubscribes; the waiter then gets the lock its holder
    # lost with the restart
    ng = make_nginx(watchdog=1.5, errors=[REFUSED, RESET, SUB_LOST, lost("again", "deleted")])
    t1, holder = hold_in_background(ng, "/hold?name=again&secs=3")
    assert wait_for(lambda: raw("EXISTS", "again") == 1, 5)
    t2, waiter = hold_in_background(ng, "/hold?name=again&timeout=20")
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{again}")[1] == 1, 5)
    server.stop()
    server.start()
    t1.join(30)
    t2.join(30)
    assert holder["lost"] == "true", holder
    assert waiter["acquired"] == "true" and waiter["released"] == "true", waiter
    assert float(waiter["got"]) < float(holder["left"])  # it did not wait for the holder's end
