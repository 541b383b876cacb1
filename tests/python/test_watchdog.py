"""Watchdog renewal, loss detection and its reporting: flag, reason, callback, log, exceptions."""

import logging
import os
import threading
import time

import pytest

import redlease
from testkit import wait_for


def test_watchdog_renews_over_several_timeouts(make_client, raw):
    c = make_client(watchdog_timeout=0.3)
    lock = c.lock("long-job")
    with lock:
        for _ in range(12):  # 1.2 s: four watchdog timeouts
            time.sleep(0.1)
            assert raw("PTTL", "long-job") > 0
        assert not lock.lost
        stats = c.stats()
        assert stats["renew_rounds"] >= 3 and stats["renewed_holds"] >= 3
    assert raw("EXISTS", "long-job") == 0


def test_crashed_holder_frees_the_lock_by_its_lease(make_client, server):
    # A client closed without releasing is what a dead process leaves: no more renewals.
    a, b = make_client(watchdog_timeout=0.4), make_client()
    a.lock("crash").acquire()
    a.close()
    assert not b.lock("crash").acquire(timeout=0)
    start = time.monotonic()
    assert b.lock("crash").acquire(timeout=5)
    assert time.monotonic() - start < 1.5


def test_renewals_are_logged_at_debug(make_client, caplog):
    caplog.set_level(logging.DEBUG, logger="redlease")
    c = make_client(watchdog_timeout=0.3)
    with c.lock("logged"):
        time.sleep(0.45)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not any("renewed" in r.message for r in caplog.records):
        time.sleep(0.05)
    renewed = [r for r in caplog.records if r.name == "redlease" and "renewed" in r.message]
    assert renewed and renewed[0].levelno == logging.DEBUG



def test_deleted_key_is_reported_everywhere(make_client, raw, caplog):
    caplog.set_level(logging.ERROR, logger="redlease")
    reports = []
    called = threading.Event()

    def on_lost(name, reason):
        reports.append((name, reason, threading.current_thread() is threading.main_thread()))
        called.set()

    c = make_client(watchdog_timeout=0.3, on_lost=on_lost)
    lock = c.lock("job:7")
    lock.acquire()
    raw("DEL", "job:7")
    assert called.wait(2.0)  # within about one renewal period (0.1 s)
    assert reports == [("job:7", "deleted", False)]
    assert lock.lost and lock.lost_reason == "deleted"
    assert wait_for(lambda: any("job:7" in r.message for r in caplog.records))
    record = next(r for r in caplog.records if "job:7" in r.message)
    assert record.levelno == logging.ERROR and "deleted" in record.message
    with pytest.raises(redlease.LockLostError) as info:
        lock.acquire(timeout=0)  # not before the lost hold is released
    assert info.value.reason == "deleted"
    with pytest.raises(redlease.LockLostError) as info:
        lock.release()
    assert info.value.reason == "deleted"
    assert not lock.lost and lock.hold_count == 0
    assert lock.acquire(timeout=0)  # usable again
    lock.release()


def test_lost_hold_is_not_renewed_and_owner_change_is_reported(make_client, raw):
    reasons = []
    c = make_client(watchdog_timeout=0.3, on_lost=lambda n, r: reasons.append(r))
    lock = c.lock("taken")
    lock.acquire()
    raw("DEL", "taken")
    raw("HSET", "taken", "someone-else:1", 1)
    raw("PEXPIRE", "taken", 60000)
    assert wait_for(lambda: lock.lost)
    assert wait_for(lambda: reasons == ["owner_changed"])
    time.sleep(0.3)
    assert raw("HGETALL", "taken") == [b"someone-else:1", b"1"]  # not touched by the watchdog
    assert raw("PTTL", "taken") > 59000 - 1000
    with pytest.raises(redlease.LockLostError):
        lock.release()


def test_with_exit_raises_lock_lost(make_client, raw):
    c = make_client(watchdog_timeout=0.3)
    lock = c.lock("with-lost")
    with pytest.raises(redlease.LockLostError) as info:
        with lock:
            raw("DEL", "with-lost")
            wait_for(lambda: lock.lost)
    assert info.value.reason == "deleted"
    assert lock.hold_count == 0


def test_with_exit_chains_the_body_error(make_client, raw):
    c = make_client(watchdog_timeout=0.3)
    lock = c.lock("with-lost-body")
    with pytest.raises(redlease.LockLostError) as info:
        with lock:
            raw("DEL", "with-lost-body")
            wait_for(lambda: lock.lost)
            raise KeyError("from the body")
    assert isinstance(info.value.__context__, KeyError)  # the body's error is kept, not masked
    assert lock.hold_count == 0


def test_body_error_passes_through_when_nothing_was_lost(client):
    lock = client.lock("body-error")
    with pytest.raises(KeyError):
        with lock:
            raise KeyError("x")
    assert not lock.locked()


def test_on_lost_errors_are_logged_not_raised(make_client, raw, caplog):
    caplog.set_level(logging.ERROR, logger="redlease")

    def broken(name, reason):
        raise RuntimeError("callback bug")

    c = make_client(watchdog_timeout=0.3, on_lost=broken)
    lock = c.lock("cb")
    lock.acquire()
    raw("DEL", "cb")
    assert wait_for(lambda: any("on_lost callback raised" in r.message for r in caplog.records))
    record = next(r for r in caplog.records if "on_lost callback raised" in r.message)
    assert "callback bug" in (record.exc_text or str(record.exc_info))
    # the core went on working
    with pytest.raises(redlease.LockLostError):
        lock.release()
    with lock:
        pass


def test_client_closed_from_on_lost_does_not_deadlock(raw, server):
    done = threading.Event()
    holder = {}

    def close_it(name, reason):
        holder["client"].close()  # on the event thread: the join is handed off
        done.set()

    c = redlease.Client(server.url, watchdog_timeout=0.3, on_lost=close_it)
    holder["client"] = c
    c.lock("self-close").acquire()
    before = threads_and_fds()
    raw("DEL", "self-close")
    assert done.wait(3) and c.closed
    # the client's threads and connections really went away
    assert wait_for(lambda: threads_and_fds()[0] < before[0] and threads_and_fds()[1] < before[1],
                    5), (threads_and_fds(), before)


def test_force_unlock_by_another_client_is_reported(make_client):
    lost = []
    got = threading.Event()
    holder = make_client(watchdog_timeout=0.3,
                         on_lost=lambda name, reason: (lost.append((name, reason)), got.set()))
    other = make_client()
    lock = holder.lock(b"bytes:\xff")
    lock.acquire()
    assert other.lock(b"bytes:\xff").force_unlock()
    assert got.wait(2.0)
    assert lost == [(b"bytes:\xff", "deleted")]  # not UTF-8: the name comes back as bytes
    assert other.lock(b"bytes:\xff").acquire(timeout=0)
    with pytest.raises(redlease.LockLostError):
        lock.release()


def threads_and_fds():
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))


def test_clients_referenced_by_their_own_callback_are_collected(server):
    import gc

    class Worker:
        def __init__(self):
            self.client = redlease.Client(server.url, on_lost=self.on_lost)
            with self.client.lock("w"):  # threads and connections in use
                pass

        def on_lost(self, name, reason):
            pass

    Worker()
    gc.collect()
    before = threads_and_fds()
    for _ in range(20):
        Worker()
    gc.collect()
    assert wait_for(lambda: threads_and_fds() <= before, 5), (threads_and_fds(), before)


def test_close_delivers_every_queued_loss(make_client, raw):
    calls = []
    c = make_client(watchdog_timeout=0.3, on_lost=lambda name, reason: calls.append(name))
    locks = [c.lock(f"q{i}") for i in range(10)]
    for lock in locks:
        lock.acquire()
    for i in range(10):
        raw("DEL", f"q{i}")
    assert wait_for(lambda: all(lock.lost for lock in locks), 3)
    c.close()
    assert sorted(calls) == sorted(f"q{i}" for i in range(10))


def test_lock_lost_error_pickles_with_its_reason():
    import pickle
    e = pickle.loads(pickle.dumps(redlease.LockLostError("gone", "deleted")))
    assert type(e) is redlease.LockLostError and e.reason == "deleted" and str(e) == "gone"
