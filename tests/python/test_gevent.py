"""Green threads: under gevent's monkey-patching a hold belongs to the greenlet and a lock wait
yields to the hub. Each test runs in a subprocess of its own (patching is process-wide)."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("gevent", reason="gevent comes with the test extras (pip install '.[test]')")

PRELUDE = """
from gevent import monkey
monkey.patch_all()
import sys, time, threading
import gevent
import redlease
url = sys.argv[1]
"""


def run_green(server, body, timeout=60):
    code = PRELUDE + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", code, server.url], capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_greenlets_exclude_each_other_and_a_ticker_keeps_ticking(server):
    out = run_green(server, """
        client = redlease.Client(url)
        inside, most, gaps, stop = [], [0], [], [False]

        def worker(i):
            for _ in range(3):
                with client.lock("x", timeout=10):
                    inside.append(i)
                    most[0] = max(most[0], len(inside))
                    gevent.sleep(0.02)
                    inside.remove(i)

        def ticker():
            last = time.monotonic()
            while not stop[0]:
                gevent.sleep(0.001)
                now = time.monotonic()
                gaps.append(now - last)
                last = now
        tick = gevent.spawn(ticker)
        gevent.joinall([gevent.spawn(worker, i) for i in range(5)], raise_error=True)
        stop[0] = True
        tick.join()
        # 15 holds of 20 ms one after the other: the waits took ~0.3 s, the ticker ran through
        assert most[0] == 1, most
        assert len(gaps) > 100, len(gaps)
        assert max(gaps) < 0.05, max(gaps)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_owner_is_the_greenlet_reentrant_within_it(server):
    run_green(server, """
        client = redlease.Client(url)
        lock = client.lock("own")
        assert lock.acquire(timeout=0) and lock.acquire(timeout=0)
        assert lock.hold_count == 2
        other = gevent.spawn(lambda: (lock.acquire(timeout=0), lock.hold_count))
        other.join()
        assert other.value == (False, 0), other.value
        releaser = gevent.spawn(lock.release)
        releaser.join()
        assert isinstance(releaser.exception, redlease.NotOwnedError), releaser.exception
        words = str(releaser.exception)
        assert words.startswith('lock "own" is not held by this greenlet'), words
        assert "hand_off()" in words, words
        lock.release()
        lock.release()
    """)


def test_a_killed_waiter_leaves_nothing_held_and_no_subscription(server, raw):
    run_green(server, """
        client = redlease.Client(url)
        lock = client.lock("kill")
        lock.acquire()
        waiter = gevent.spawn(lock.acquire)
        gevent.sleep(0.3)
        waiter.kill()
        lock.release()
        gevent.sleep(0.3)
        assert client.stats()["subscriptions"] == 0, client.stats()
    """)
    assert raw("EXISTS", "kill") == 0


def test_a_waiter_killed_as_the_lock_is_handed_to_it_keeps_nothing(server, raw):
    # The release and the kill race: the grant lands before, during or after the kill. Whatever
    # the order, the killed greenlet keeps no hold (released at once) and no subscription.
    run_green(server, """
        client = redlease.Client(url)
        lock = client.lock("race")
        for round_ in range(30):
            lock.acquire()
            waiter = gevent.spawn(lock.acquire)
            gevent.sleep(0.05)
            lock.release()
            for _ in range(round_ % 6):
                gevent.sleep(0)
            if round_ % 3 == 2:
                time.sleep(0.002 * (round_ % 5))  # the hub stalls: the grant waits in the queue
            waiter.kill()
            assert waiter.dead
            deadline = time.monotonic() + 5
            busy = lambda: lock.locked() or client.stats()["subscriptions"]  # noqa: E731
            while busy() and time.monotonic() < deadline:
                gevent.sleep(0.01)
            assert not lock.locked(), round_
            assert client.stats()["subscriptions"] == 0, round_
        print("ok")
    """)
    assert raw("EXISTS", "race") == 0


def test_a_greenlet_that_ends_holding_has_its_hold_released(server, raw):
    # The greenlet is still referenced (not collected): its end alone releases the hold.
    run_green(server, """
        client = redlease.Client(url)
        forgetful = gevent.spawn(client.lock("forgot").acquire)
        forgetful.join()
        assert forgetful.value is True
        deadline = time.monotonic() + 5
        while client.lock("forgot").locked() and time.monotonic() < deadline:
            gevent.sleep(0.01)
        assert not client.lock("forgot").locked()
        print(forgetful.dead)
    """)
    assert raw("EXISTS", "forgot") == 0


def test_a_timed_wait_with_gevent_timeout_gives_up(server):
    run_green(server, """
        client = redlease.Client(url)
        lock = client.lock("to")
        lock.acquire()
        def wait():
            t0 = time.monotonic()
            got = lock.acquire(timeout=0.2)
            return got, time.monotonic() - t0
        g = gevent.spawn(wait)
        g.join()
        got, waited = g.value
        assert got is False and 0.15 < waited < 3, g.value
    """)


def test_family_waits_are_refused_under_gevent(server):
    run_green(server, """
        client = redlease.Client(url)
        try:
            client.semaphore("s").acquire()
        except RuntimeError as e:
            assert "greenlet" in str(e)
        else:
            raise AssertionError("a semaphore wait was allowed to block the hub")
        assert client.semaphore("s").acquire(timeout=0) is False
    """)


def test_eventlet_patching_is_refused_with_a_clear_error(server):
    # eventlet is not installed: its patcher is stood in for with the one call redlease asks.
    code = """
import sys, types
patcher = types.ModuleType("eventlet.patcher")
patcher.is_monkey_patched = lambda name: name == "thread"
sys.modules["eventlet.patcher"] = patcher
import redlease
try:
    redlease.Client(sys.argv[1])
except RuntimeError as e:
    assert "eventlet" in str(e), e
    print("refused")
"""
    out = subprocess.run([sys.executable, "-c", code, server.url], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "refused", out.stdout + out.stderr
