"""A request that ends without releasing: its holds are released by the worker's watchdog, with
a warning in the error log (docs/openresty.md). Shown for a handler that raises while holding
(its coroutine is dead at the next round) and for a client abort under lua_check_client_abort
(nginx drops the request's coroutine; found once the collector has freed it)."""

import socket
import threading
import time

from conftest import fields
from testkit import wait_for

WATCHDOG = 6.0  # the lease: a key gone well before it was released, not expired


def test_handler_error_releases_the_hold(server, raw, make_nginx):
    ng = make_nginx(watchdog=WATCHDOG, errors=[
        r"lua entry thread aborted: runtime error: .*the handler failed while holding leak"])
    waiter = {}
    status, _ = ng.get("/leak_error?name=leak")
    assert status == 500
    taken = time.monotonic()
    assert raw("EXISTS", "leak") == 1
    t = threading.Thread(target=lambda: waiter.update(
        fields(ng.get("/hold?name=leak&timeout=20")[1])))
    t.start()
    assert wait_for(lambda: raw("EXISTS", "leak") == 0 or "was still held" in ng.log(), 10)
    t.join(20)
    assert waiter["acquired"] == "true", waiter
    assert float(waiter["waited"]) < WATCHDOG - 1  # released, not left to expire
    assert time.monotonic() - taken < WATCHDOG
    assert ('redlease: lock "leak" was still held (1 hold(s)) when the request or timer that '
            'took it ended; released it') in ng.log()


ABORT = """
    location /leak_sleep {
      lua_check_client_abort on;
      content_by_lua_block { require("app").leak_sleep() }
    }
"""


def test_client_abort_releases_the_hold(server, raw, make_nginx):
    ng = make_nginx(watchdog=WATCHDOG, locations=ABORT)
    s = socket.create_connection(("127.0.0.1", ng.port))
    s.sendall(b"GET /leak_sleep?name=gone HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"holding" in s.recv(4096)
    s.close()  # the client goes away: nginx ends the request, its handler never resumes
    taken = time.monotonic()
    assert raw("EXISTS", "gone") == 1
    assert wait_for(lambda: raw("EXISTS", "gone") == 0, 3 * WATCHDOG)
    released_after = time.monotonic() - taken
    assert 'redlease: lock "gone" was still held' in ng.log()
    assert "released it" in ng.log()
    print(f"client abort: hold released {released_after:.1f} s after the abort")


ACCESS = """
    location /leak_access {
      access_by_lua_block { assert(require("app").client:lock("early"):acquire { timeout = 0 }) }
      content_by_lua_block { ngx.say("done") }
    }
"""


def test_access_phase_hold_released_after_its_request(server, raw, make_nginx):
    # a hold of the access phase lives with its request (a later phase may release its guard);
    # once the request is over and collected, the watchdog releases it
    ng = make_nginx(watchdog=WATCHDOG, locations=ACCESS)
    assert ng.get("/leak_access") == (200, "done\n")
    taken = time.monotonic()
    assert raw("EXISTS", "early") == 1
    assert wait_for(lambda: raw("EXISTS", "early") == 0, 3 * WATCHDOG)
    print(f"access-phase hold released {time.monotonic() - taken:.1f} s after its request")
    assert 'redlease: lock "early" was still held (1 hold(s))' in ng.log()
