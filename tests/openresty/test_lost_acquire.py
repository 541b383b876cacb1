"""An acquire whose answer is lost: Redis stalls longer than the command timeout (SIGSTOP of the
test's redis-server: the connection hangs, nothing is refused), the request's acquire answers
"connection: ... timeout", and Redis runs the acquire it had read when it wakes. Nobody knows of
that hold; the backend takes it back (as the core's multi-lock does with a member whose acquire
failed on the network), so that the next request gets the lock at once and not a 503 until the
hold's 30 s watchdog lease runs out."""

import os
import signal
import threading
import time

import pytest

from conftest import READ_TIMED_OUT, fields
from testkit import wait_for

KINDS = ["lock", "fenced", "fair", "read", "write"]
OPTIONS = "command_timeout = 0.5"  # seconds: the stall outlasts it


def left_behind(raw, name):
    """The lock's keys in Redis (the fenced lock's token counter is never deleted)."""
    return [k for k in raw("KEYS", f"*{name}*") if b"lock_token" not in k]


def warm_up(ng, kind):
    """Redis knows the scripts (else the stalled EVALSHA would only be answered NOSCRIPT)."""
    assert fields(ng.get(f"/cycle?name=warm&kind={kind}&timeout=0")[1]) == {"ok": "true"}


def stalled(server, secs, during):
    """Runs during() with Redis stopped, and resumes it `secs` after the stop."""
    os.kill(server.process.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        return during()
    finally:
        time.sleep(max(0.0, secs - (time.monotonic() - t0)))
        os.kill(server.process.pid, signal.SIGCONT)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("timeout", ["0", "5"])
def test_a_lost_acquire_leaves_no_hold(server, raw, make_nginx, kind, timeout):
    ng = make_nginx(watchdog=30, options=OPTIONS, errors=[READ_TIMED_OUT])
    name = f"ghost:{kind}:{timeout}"
    warm_up(ng, kind)
    r = stalled(server, 1.0, lambda: fields(
        ng.get(f"/cycle?name={name}&kind={kind}&timeout={timeout}", 10)[1]))
    assert r["ok"] == "false" and r["err"].startswith("connection: "), r
    assert "timeout" in r["err"], r
    # Redis ran the acquire when it woke; it is taken back at once, not after its 30 s lease
    assert wait_for(lambda: left_behind(raw, name) == [], 5), (
        left_behind(raw, name), raw("PTTL", name))
    after = fields(ng.get(f"/cycle?name={name}&kind={kind}&timeout=0")[1])
    assert after == {"ok": "true"}, after
    assert (f'lock "{name}": took back the hold of an acquire whose answer was lost '
            "(connection: no answer from") in ng.log()


@pytest.mark.parametrize("kind", ["lock", "read"])
def test_a_new_acquire_of_the_run_waits_for_the_undo(server, raw, make_nginx, kind):
    # the same request acquires again while the lost acquire is still being taken back: it
    # waits for that, and the undo never takes the new hold
    ng = make_nginx(watchdog=30, options=OPTIONS, errors=[READ_TIMED_OUT])
    name = f"retry:{kind}"
    warm_up(ng, kind)
    result = {}
    t = threading.Thread(target=lambda: result.update(
        fields(ng.get(f"/lost_retry?name={name}&kind={kind}&secs=0.2", 30)[1])))
    stalled(server, 1.5, t.start)
    t.join(30)
    assert result == {"first": "connection", "second": "acquired", "count": "1",
                      "release": "true", "gone": "true"}, result
    assert left_behind(raw, name) == []


def test_an_ended_requests_hold_is_released_after_a_pause(server, raw, make_nginx):
    # a request ends holding a lock (its handler raised) and Redis pauses its clients (CLIENT
    # PAUSE, as a failover or a maintenance does) when the watchdog releases it: the release
    # times out and its connection is closed, so Redis drops it. It is retried, and the key is
    # gone soon after the pause, not when its lease (12 s from the acquire) runs out.
    ng = make_nginx(watchdog=12, options=OPTIONS,
                    errors=[READ_TIMED_OUT, "the handler failed while holding leaked"])
    t0 = time.monotonic()
    assert ng.get("/leak_error?name=leaked")[0] == 500
    # the watchdog's round at 4 s finds the ended request; its release, tried twice, times out
    raw("CLIENT", "PAUSE", "6000", "ALL")
    time.sleep(6)
    assert wait_for(lambda: raw("EXISTS", "leaked") == 0, 3), raw("PTTL", "leaked")
    assert time.monotonic() - t0 < 10
    assert "could not release it yet" in ng.log()
