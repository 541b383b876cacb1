"""redlease.Semaphore: Redisson's RSemaphore layout, permits per client, waits woken by a
release, timeouts, `with`, Ctrl-C-style interruption, never more holders than permits, and bad
input."""

import os
import signal
import threading
import time

import pytest

import redlease
from testkit import wait_for


def test_permits_in_redissons_layout(client, raw):
    sem = client.semaphore("exports")
    assert sem.try_set_permits(3) is True
    assert raw("GET", "exports") == b"3"
    assert sem.try_set_permits(10) is False
    assert sem.acquire(2) is True
    assert raw("GET", "exports") == b"1"
    assert sem.held == 2
    assert sem.acquire(2, timeout=0) is False
    assert sem.available_permits() == 1
    sem.release()
    sem.release()
    assert raw("GET", "exports") == b"3"
    sem.add_permits(2)
    sem.add_permits(-1)
    assert raw("GET", "exports") == b"4"
    assert sem.drain_permits() == 4
    assert raw("GET", "exports") == b"0"
    sem.release(4)
    assert sem.available_permits() == 4
    assert sem.name == "exports" and "exports" in repr(sem)


def test_with_takes_one_permit_and_times_out(make_client):
    a, b = make_client(), make_client()
    sem = a.semaphore("one", timeout=0.2)
    sem.try_set_permits(1)
    with sem:
        assert sem.held == 1
        other = b.semaphore("one", timeout=0.2)
        start = time.monotonic()
        with pytest.raises(redlease.LockTimeout, match="permit\\(s\\) not free within 0.200 s"):
            with other:
                pass
        assert 0.15 < time.monotonic() - start < 3
    assert sem.held == 0 and sem.available_permits() == 1


def test_release_wakes_a_waiter(make_client, raw):
    a, b = make_client(), make_client()
    sa, sb = a.semaphore("wake"), b.semaphore("wake")
    sa.try_set_permits(1)
    assert sa.acquire()
    got = {}

    def wait():
        got["ok"] = sb.acquire(timeout=10)
        got["at"] = time.monotonic()

    t = threading.Thread(target=wait)
    t.start()
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_sc:{wake}")[1] == 1)
    time.sleep(0.1)
    assert "ok" not in got
    released = time.monotonic()
    sa.release()
    t.join(10)
    assert got["ok"] is True and got["at"] - released < 1.0
    sb.release()


def test_permits_belong_to_the_client_any_thread_may_release(client, make_client):
    sem = client.semaphore("handed")
    sem.try_set_permits(1)
    assert sem.acquire()
    errors = []
    t = threading.Thread(target=lambda: errors.append(sem.release()))
    t.start()
    t.join()
    assert errors == [None] and sem.available_permits() == 1
    with pytest.raises(redlease.NotOwnedError, match="this client holds 0"):
        make_client().semaphore("handed").release()


def test_never_more_holders_than_permits(make_client):
    clients = [make_client(), make_client()]
    clients[0].semaphore("cap").try_set_permits(3)
    inside, most, lock = [0], [0], threading.Lock()
    failures = []

    def work(c):
        sem = c.semaphore("cap")
        for _ in range(25):
            if not sem.acquire(timeout=10):
                failures.append("timeout")
                return
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.001)
            with lock:
                inside[0] -= 1
            sem.release()

    threads = [threading.Thread(target=work, args=(clients[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert 2 <= most[0] <= 3
    assert clients[1].semaphore("cap").available_permits() == 3


class Interrupted(Exception):
    pass


def test_a_signal_handler_that_raises_ends_the_wait(client, raw):
    sem = client.semaphore("interrupt")
    sem.try_set_permits(0)

    def handler(signum, frame):
        raise Interrupted()

    old = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        start = time.monotonic()
        with pytest.raises(Interrupted):
            sem.acquire(timeout=10)
        assert time.monotonic() - start < 3
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, old)
    assert sem.held == 0
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_sc:{interrupt}")[1] == 0)


def test_bad_input(client, raw):
    sem = client.semaphore("bad")
    with pytest.raises(ValueError, match="permits must be"):
        sem.acquire(-1)
    with pytest.raises(ValueError, match="permits must be"):
        sem.release(-2)
    with pytest.raises(ValueError, match="permits must be"):
        sem.try_set_permits(-3)
    with pytest.raises(TypeError):
        sem.try_set_permits(1.5)
    with pytest.raises(ValueError, match="timeout"):
        sem.acquire(1, timeout=-5)
    with pytest.raises(redlease.NotOwnedError, match="cannot release 1 permit"):
        sem.release()
    with pytest.raises(ValueError, match="must not be empty"):
        client.semaphore("")
    with pytest.raises(TypeError, match="str or bytes"):
        client.semaphore(42)  # type: ignore[arg-type]
    assert raw("EXISTS", "bad") == 0
    raw("HSET", "a-lock", "owner", 1)
    with pytest.raises(redlease.ServerError, match="WRONGTYPE"):
        client.semaphore("a-lock").acquire(timeout=0)


def test_closed_client(make_client):
    c = make_client()
    sem = c.semaphore("closing")
    c.close()
    with pytest.raises(redlease.ClientClosedError):
        sem.acquire(timeout=0)
    with pytest.raises(redlease.ClientClosedError):
        c.semaphore("again")
