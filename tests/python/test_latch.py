"""redlease.CountDownLatch: Redisson's RCountDownLatch layout, every waiter (of every thread)
woken at zero, timeouts, deletion, and bad input."""

import threading
import time

import pytest

import redlease
from testkit import wait_for


def test_waiters_of_every_thread_wake_at_zero(make_client, raw):
    a, b = make_client(), make_client()
    la, lb = a.count_down_latch("batch"), b.count_down_latch("batch")
    assert la.try_set_count(2) is True
    assert raw("GET", "batch") == b"2"
    assert la.try_set_count(5) is False
    assert lb.count() == 2
    assert lb.wait(timeout=0) is False
    done = []

    def wait():
        done.append((lb.wait(timeout=10), time.monotonic()))

    threads = [threading.Thread(target=wait) for _ in range(3)]
    for t in threads:
        t.start()
    channel = "redisson_countdownlatch__channel__{batch}"
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", channel)[1] == 1)
    la.count_down()
    time.sleep(0.2)
    assert done == []  # one left
    zero = time.monotonic()
    la.count_down()
    for t in threads:
        t.join(10)
    assert len(done) == 3 and all(ok and at - zero < 1.0 for ok, at in done)
    assert raw("EXISTS", "batch") == 0 and la.count() == 0
    assert lb.wait() is True  # no latch: nothing to wait for


def test_wait_times_out_and_delete(client, raw):
    latch = client.count_down_latch("stuck")
    latch.try_set_count(1)
    start = time.monotonic()
    assert latch.wait(timeout=0.3) is False
    assert 0.25 < time.monotonic() - start < 3
    assert latch.delete() is True and latch.delete() is False
    assert raw("EXISTS", "stuck") == 0
    latch.count_down()  # no latch: nothing happens
    assert raw("EXISTS", "stuck") == 0


def test_bad_input(client, raw):
    latch = client.count_down_latch("badlatch")
    with pytest.raises(ValueError, match="count must be"):
        latch.try_set_count(0)
    with pytest.raises(ValueError, match="count must be"):
        latch.try_set_count(-2)
    with pytest.raises(ValueError, match="timeout"):
        latch.wait(timeout=-3)
    with pytest.raises(TypeError):
        latch.try_set_count("3")  # type: ignore[arg-type]
    assert raw("EXISTS", "badlatch") == 0
    raw("HSET", "badlatch", "f", 1)
    with pytest.raises(redlease.ServerError, match="WRONGTYPE"):
        latch.count_down()
