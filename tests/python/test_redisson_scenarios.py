"""Behaviours Redisson's own lock tests check, in redlease's words (where redlease differs on
purpose, the test says so)."""

import threading
import time

import pytest

import redlease
from testkit import wait_for


def test_partial_release_of_an_explicit_lease_keeps_that_lease(client, raw):
    lock = client.lock("explicit", lease=8)
    lock.acquire()
    lock.acquire()
    time.sleep(0.3)
    lock.release()  # one hold left: the lease is the caller's 8 s, not the 30 s watchdog default
    pttl = raw("PTTL", "explicit")
    assert 7_500 < pttl <= 8_000
    lock.release()
    assert raw("EXISTS", "explicit") == 0


def test_timed_acquire_of_a_held_lock_returns_after_about_its_timeout(make_client):
    make_client().lock("held").acquire()
    start = time.monotonic()
    assert make_client().lock("held").acquire(timeout=3) is False
    waited = time.monotonic() - start
    assert 2.9 <= waited < 4.0


def test_release_after_the_lease_expired_is_reported_as_lost(client):
    """Redisson answers an expired holder's unlock with IllegalMonitorStateException (not owned);
    redlease says more: the hold was lost while held (LockLostError, reason "expired"), so the
    caller knows its critical section was not exclusive to the end."""
    lock = client.lock("expired", lease=0.2)
    lock.acquire()
    time.sleep(0.4)
    with pytest.raises(redlease.LockLostError) as caught:
        lock.release()
    assert caught.value.reason == "expired"
    with pytest.raises(redlease.NotOwnedError):  # and then it is simply not held
        lock.release()


def test_a_client_closed_without_unlocking_frees_the_lock_within_the_watchdog_timeout(
        make_client):
    holder = make_client(watchdog_timeout=1.0)
    holder.lock("abandoned").acquire()
    time.sleep(1.2)  # renewed meanwhile
    holder.close()
    start = time.monotonic()
    assert make_client().lock("abandoned").acquire(timeout=5)
    assert time.monotonic() - start < 1.0 + 0.5


def test_sixteen_threads_of_try_release_cycles_leave_every_hold_registered(make_client, raw):
    c = make_client(watchdog_timeout=0.9)
    errors, barrier = [], threading.Barrier(16)
    holding, done = threading.Event(), threading.Event()
    held = []

    def worker(i):
        lock = c.lock(f"cycle:{i}")
        try:
            for _ in range(1500):
                if lock.acquire(blocking=False):
                    lock.release()
            assert lock.acquire(blocking=False)
            held.append(i)
            barrier.wait(10)
            holding.set()
            done.wait(10)
            lock.release()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    assert holding.wait(60)
    rounds_before = c.stats()["renew_rounds"]
    time.sleep(3 * 0.9)  # three watchdog timeouts: every hold must have been renewed
    stats = c.stats()
    assert stats["last_round_holds"] == 16
    assert stats["renew_rounds"] >= rounds_before + 6
    for i in range(16):
        assert raw("PTTL", f"cycle:{i}") > 0
    done.set()
    for t in threads:
        t.join(30)
    assert errors == []
    assert sorted(held) == list(range(16))
    assert all(raw("EXISTS", f"cycle:{i}") == 0 for i in range(16))
    wait_for(lambda: not c.stats()["watchdog_running"], timeout=5)
