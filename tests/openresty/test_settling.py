"""The core's answers and rules since the REENTERED protocol, followed by the backend: a re-entry
is told apart from a fresh grant (a run granted afresh learns its hold was lost), a failed
release is settled before the run acquires again, Redis counts of the owner that the run did not
know of are removed at its last release, a hold stopped by max_hold is freed at its release, and
a hold whose renewals cannot reach Redis is declared lost when its confirmed lease ends."""

import os
import signal
import threading
import time

import pytest

from conftest import READ_TIMED_OUT, fields, lost
from testkit import wait_for


@pytest.mark.parametrize("kind", ["lock", "fenced", "fair", "read", "write"])
def test_reacquire_granted_afresh_reports_the_loss(server, raw, make_nginx, kind):
    ng = make_nginx(errors=[lost(f"afresh:{kind}", "deleted")])
    r = fields(ng.get(f"/afresh?name=afresh:{kind}&kind={kind}")[1])
    assert r == {"count": "2", "release2": "true", "afresh": "lost:deleted",
                 "lost": "true:deleted", "taken_back": "true", "release1": "lost",
                 "again": "true"}, r
    # nothing left behind (the fenced lock's token counter is never deleted)
    assert wait_for(lambda: [k for k in raw("KEYS", "*afresh*") if b"lock_token" not in k] == [],
                    2), raw("KEYS", "*afresh*")


def test_failed_release_is_settled_before_reacquiring(server, raw, make_nginx):
    ng = make_nginx(errors=[READ_TIMED_OUT])  # the release stalled past its command timeout
    r = fields(ng.get("/settle?name=settle", 30)[1])
    assert r == {"release": "connection", "guard_open": "true", "acquired": "true",
                 "settled": "true", "count": "1", "lost": "false", "renewed": "true",
                 "release2": "true", "gone": "true"}, r


def test_stray_holds_removed_at_the_last_release(server, raw, make_nginx):
    ng = make_nginx()
    r = fields(ng.get("/stray?name=stray")[1])
    assert r == {"release": "true", "gone": "true", "shared_release": "true",
                 "shared_count": "1", "fenced_release": "true", "shared_gone": "true"}, r
    assert ('lock "stray": Redis held 2 more hold(s) of this owner than this client knew'
            in ng.log())


def test_release_of_a_max_hold_loss_frees_the_key(server, raw, make_nginx):
    # lease 3 s: without the release the key would live until about 3 s after the acquire
    ng = make_nginx(watchdog=3.0, errors=[lost("capped2", "max_hold")])
    t0 = time.monotonic()
    f = fields(ng.get("/hold?name=capped2&max_hold=0.5&secs=1.5", 30)[1])
    assert f["lost"] == "true" and f["reason"] == "max_hold", f
    assert raw("EXISTS", "capped2") == 0
    assert time.monotonic() - t0 < 2.8


def test_unreachable_declared_when_the_confirmed_lease_ends(server, raw, make_nginx):
    # Redis stopped (SIGSTOP: connections hang, nothing is refused): the renewal rounds time out
    # no later than the confirmed lease's end, and the loss is declared then, not a command
    # timeout (5 s) later
    ng = make_nginx(watchdog=1.5, errors=[READ_TIMED_OUT, lost("stalled", "unreachable")])
    result = {}
    t = threading.Thread(target=lambda: result.update(
        fields(ng.get("/watch_loss?name=stalled&secs=6", 60)[1])))
    t.start()
    assert wait_for(lambda: raw("EXISTS", "stalled") == 1, 5)
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        time.sleep(4)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    t.join(30)
    assert result["lost"] == "true" and result["reason"] == "unreachable", result
    assert float(result["lost_after"]) < 2.5, result
    assert result["release"] == "lost", result
