"""redlease.MultiLock: locks of any kinds and clients taken as one (RedissonMultiLock's rules),
and RedLock over three throwaway servers."""

import threading
import time

import pytest

import redlease
from redlease.testing import RedisServer


def test_all_or_none(make_client, raw):
    a, b = make_client(), make_client()
    multi = a.multi_lock(a.lock("m:a"), a.fair_lock("m:b"), a.rw_lock("m:c").write)
    other = b.lock("m:b")
    assert other.acquire()
    assert multi.acquire(blocking=False) is False
    assert multi.held == 0 and raw("EXISTS", "m:a") == 0
    other.release()
    with multi:
        assert multi.held == 3
        assert other.acquire(timeout=0) is False
    assert raw("EXISTS", "m:a") + raw("EXISTS", "m:b") + raw("EXISTS", "m:c") == 0
    with pytest.raises(redlease.NotOwnedError):
        multi.release()


def test_the_wait_covers_all_and_the_lease_is_set_on_each(make_client, raw):
    a, b = make_client(), make_client()
    multi = a.multi_lock(a.lock("w:a"), a.lock("w:b"))
    assert b.lock("w:b").acquire(lease=0.4)  # expires by itself
    start = time.monotonic()
    assert multi.acquire(timeout=3, lease=8)
    assert 0.3 < time.monotonic() - start < 2.5
    assert 7000 < raw("PTTL", "w:a") <= 8000 and 7000 < raw("PTTL", "w:b") <= 8000
    multi.release()


def test_another_thread_is_another_owner(client):
    multi = client.multi_lock(client.lock("t:a"), client.lock("t:b"), timeout=0.2)
    with multi:
        result = []
        t = threading.Thread(target=lambda: result.append(multi.acquire(timeout=0.2)))
        t.start()
        t.join()
        assert result == [False]


def test_bad_input(client, make_client):
    with pytest.raises(ValueError, match="needs locks"):
        client.multi_lock()
    with pytest.raises(TypeError, match="a redlease lock was expected"):
        client.multi_lock(client.lock("x"), "y")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="given twice"):
        client.multi_lock(client.lock("x"), client.lock("x"))
    multi = client.multi_lock(client.lock("x"), make_client().lock("x"))  # two clients: fine
    with pytest.raises(ValueError, match="lease"):
        multi.acquire(lease=0)
    with pytest.raises(ValueError, match="non-blocking"):
        multi.acquire(False, 1)


def test_red_lock_needs_a_majority(make_client):
    servers = [RedisServer().start() for _ in range(3)]
    try:
        clients = [make_client(s.url, command_timeout=0.5) for s in servers]
        red = redlease.red_lock(*(c.lock("red") for c in clients), lease=10)
        assert red.redlock and "RedLock" in repr(red)
        with red:
            assert red.held == 3
        servers[2].stop()  # one of three down: still a majority
        with red:
            assert red.held == 2
            assert 9000 < clients[0].lock("red").remaining() * 1000 <= 10000
        assert clients[0].lock("red").locked() is False  # released where it was taken
        servers[1].stop()  # two down: no majority
        assert red.acquire(timeout=0) is False
        assert red.held == 0 and clients[0].lock("red").locked() is False
        with pytest.raises(redlease.LockTimeout):
            with redlease.red_lock(*(c.lock("red") for c in clients), timeout=0.3):
                pass
    finally:
        for s in servers:
            s.close()
