"""A request that nginx ends while it waits for a lock (a client abort under
lua_check_client_abort, ngx.exit from another light thread, a killed light thread) leaves the
lock's channel: its waiter is accounted to its run, and a run that ended is removed from every
channel, as the holds of ended runs are released (docs/openresty.md). Else the channel stayed
subscribed for good and a graceful quit never finished."""

import socket
import threading
import time

import pytest

from conftest import fields
from testkit import wait_for

ABORT = """
    location /wait_abort {
      lua_check_client_abort on;
      content_by_lua_block { require("app").hold() }
    }
    location ~ ^/(wait_exit|wait_kill)$ {
      content_by_lua_block { require("app")[ngx.var[1]]() }
    }
"""

LEFT_WITHIN = 10.0  # the subscriber sweeps ended runs each second, with a collector step
QUIT_WITHIN = 10.0


def hold_elsewhere(raw, name):
    # a Redisson-format hold of another owner, kept for the whole test
    raw("HSET", name, "someone-else:1", 1)
    raw("PEXPIRE", name, 120000)


def channel_subscribers(raw, name):
    return raw("PUBSUB", "NUMSUB", f"redisson_lock__channel:{{{name}}}")[1]


def end_by_abort(ng, name):
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(f"GET /wait_abort?name={name}&timeout=60 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return s


def end_by_exit(ng, name):
    assert ng.get(f"/wait_exit?name={name}")[0] == 204


def end_by_kill(ng, name):
    assert fields(ng.get(f"/wait_kill?name={name}")[1])["killed"] == "true"


@pytest.mark.parametrize("how", ["abort", "exit", "kill"])
def test_a_waiter_nginx_ends_leaves_the_channel(server, raw, make_nginx, how):
    ng = make_nginx(locations=ABORT)
    name = f"gone-{how}"
    hold_elsewhere(raw, name)
    if how == "abort":
        s = end_by_abort(ng, name)
        assert wait_for(lambda: channel_subscribers(raw, name) == 1, 5)
        s.close()  # nginx ends the request; its handler never resumes
    else:
        {"exit": end_by_exit, "kill": end_by_kill}[how](ng, name)
    t0 = time.monotonic()
    assert wait_for(lambda: channel_subscribers(raw, name) == 0, LEFT_WITHIN), \
        f"{how}: the ended waiter still keeps the channel subscribed"
    print(f"{how}: the channel was left {time.monotonic() - t0:.1f} s after the end")
    # the worker still serves waits on that name: another request waits and is woken
    raw("DEL", name)
    assert fields(ng.get(f"/cycle?name={name}&timeout=5")[1])["ok"] == "true"
    hold_elsewhere(raw, name)
    if how == "abort":
        s = end_by_abort(ng, name)
        assert wait_for(lambda: channel_subscribers(raw, name) == 1, 5)
        s.close()
    else:
        {"exit": end_by_exit, "kill": end_by_kill}[how](ng, name)
    t0 = time.monotonic()
    # a graceful quit finishes: nothing waits in the worker any more
    assert ng.quit(QUIT_WITHIN), f"{how}: the worker is stuck shutting down"
    print(f"{how}: nginx -s quit took {time.monotonic() - t0:.1f} s")


def test_a_fair_waiter_nginx_ends_gives_up_its_place(server, raw, make_nginx):
    # a fair waiter is also a place in the lock's queue (for its wait, here 60 s): when nginx
    # ends its run, the place is given up, else the next waiter would wait behind it until then
    ng = make_nginx(locations=ABORT)
    holder, waiter = {}, {}
    th = threading.Thread(target=lambda: holder.update(
        fields(ng.get("/hold?name=fairgone&kind=fair&secs=2")[1])))
    th.start()
    assert wait_for(lambda: raw("EXISTS", "fairgone") == 1, 5)
    end_by_kill(ng, "fairgone&kind=fair")
    tw = threading.Thread(target=lambda: waiter.update(
        fields(ng.get("/hold?name=fairgone&kind=fair&timeout=20")[1])))
    tw.start()
    th.join(30)
    tw.join(30)
    assert holder["released"] == "true", holder
    assert waiter["acquired"] == "true", waiter
    assert float(waiter["got"]) - float(holder["left"]) < 1.0, "it waited behind a dead place"


RELEASING = """
    location /release_slowly {
      lua_check_client_abort on;
      content_by_lua_block {
        local g = assert(require("app").client:lock("midway"):acquire { timeout = 0 })
        ngx.say("holding")
        ngx.flush(true)
        ngx.sleep(0.5)
        g:release() -- Redis is stalled meanwhile: the client hangs up during this release
      }
    }
"""


def test_a_run_nginx_ends_during_its_release(server, raw, make_nginx):
    # the hold's "being released" mark must not outlive the run that set it: the watchdog
    # releases the hold of the ended run, and a graceful quit finishes
    ng = make_nginx(watchdog=3.0, locations=RELEASING)
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(b"GET /release_slowly HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"holding" in s.recv(4096)
    stall = threading.Thread(target=lambda: raw("DEBUG", "SLEEP", "1.5"))
    stall.start()  # from 0.1 s after the acquire; the release goes out at 0.5 s
    time.sleep(0.9)
    s.close()
    stall.join()
    assert wait_for(lambda: raw("EXISTS", "midway") == 0, 5)
    t0 = time.monotonic()
    assert ng.quit(QUIT_WITHIN), "the worker is stuck shutting down"
    print(f"nginx -s quit took {time.monotonic() - t0:.1f} s")
