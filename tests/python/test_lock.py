"""The lock API: acquire/release conventions, reentrancy, queries, owners, `with`."""

import threading
import time

import pytest

import redlease


def in_thread(fn):
    """Runs fn in another thread; returns its result or raises its exception."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert not t.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_acquire_release_and_queries(client):
    lock = client.lock("orders:42")
    assert lock.name == "orders:42"
    assert not lock.locked() and not lock.held() and lock.hold_count == 0
    assert lock.remaining() is None
    assert lock.acquire() is True
    assert lock.locked() and lock.held() and lock.hold_count == 1
    assert 29.0 < lock.remaining() <= 30.0  # watchdog mode: the 30 s default lease
    lock.release()
    assert not lock.locked() and lock.hold_count == 0 and lock.remaining() is None


def test_reentrant_hold_counts(client):
    lock = client.lock("re")
    with lock:
        with lock:
            assert lock.acquire(timeout=0)
            assert lock.hold_count == 3
            lock.release()
        assert lock.hold_count == 1 and lock.locked()
    assert lock.hold_count == 0 and not lock.locked()


def test_holds_belong_to_the_client_not_the_lock_object(client):
    a, b = client.lock("shared"), client.lock("shared")
    a.acquire()
    assert b.hold_count == 1 and b.held()
    b.release()
    assert not a.locked()


def test_another_thread_is_another_owner(client):
    lock = client.lock("owners")
    lock.acquire()
    assert in_thread(lambda: lock.acquire(blocking=False)) is False
    assert in_thread(lambda: lock.held()) is False
    assert in_thread(lambda: lock.hold_count) == 0
    with pytest.raises(redlease.NotOwnedError) as info:
        in_thread(lock.release)
    assert isinstance(info.value, RuntimeError)
    assert lock.hold_count == 1 and lock.held()  # the refusal changed nothing
    lock.release()


def test_release_without_holding_raises_not_owned(client):
    with pytest.raises(redlease.NotOwnedError):
        client.lock("never").release()


def test_another_client_is_another_owner(make_client):
    a, b = make_client(), make_client()
    la, lb = a.lock("x"), b.lock("x")
    assert la.acquire(timeout=0)
    assert not lb.acquire(timeout=0)
    assert lb.locked() and not lb.held()
    with pytest.raises(redlease.NotOwnedError):
        lb.release()
    la.release()
    assert lb.acquire(timeout=0)
    lb.release()


def test_try_once_and_timeouts(make_client):
    holder, other = make_client(), make_client()
    holder.lock("busy").acquire()
    lock = other.lock("busy")
    start = time.monotonic()
    assert lock.acquire(blocking=False) is False
    assert lock.acquire(timeout=0) is False
    assert time.monotonic() - start < 0.5  # one try each, no waiting
    start = time.monotonic()
    assert lock.acquire(timeout=0.3) is False
    waited = time.monotonic() - start
    assert 0.28 <= waited < 2.0  # the wait did happen, and ended


def test_waiter_wakes_on_release(make_client, raw):
    a, b = make_client(), make_client()
    la = a.lock("handoff")
    la.acquire()
    got = {}

    def wait():
        lock = b.lock("handoff")
        got["ok"] = lock.acquire(timeout=20)
        got["woken"] = time.monotonic()
        lock.release()

    t = threading.Thread(target=wait)
    t.start()
    deadline = time.monotonic() + 5  # until the waiter is subscribed, i.e. really waiting
    while raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{handoff}")[1] == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    released = time.monotonic()
    la.release()
    t.join(20)
    assert not t.is_alive() and got["ok"]
    assert got["woken"] - released < 5  # woken by the release, not by the 30 s lease


def test_with_raises_lock_timeout(make_client):
    make_client().lock("held").acquire()
    lock = make_client().lock("held", timeout=0.2)
    with pytest.raises(redlease.LockTimeout, match=r"not acquired within 0\.200 s$"):
        with lock:
            pytest.fail("the body must not run")
    assert lock.hold_count == 0


def test_with_uses_the_lock_lease(client, raw):
    lock = client.lock("fixed", lease=5)
    with lock:
        assert 4000 < raw("PTTL", "fixed") <= 5000
    assert lock.acquire(lease=2.5)
    assert 2000 < raw("PTTL", "fixed") <= 2500
    lock.release()


def test_fixed_lease_expires_and_is_not_renewed(make_client):
    a, b = make_client(watchdog_timeout=0.3), make_client()
    lock = a.lock("short")
    assert lock.acquire(lease=0.4)
    time.sleep(0.7)
    assert not lock.locked()
    assert b.lock("short").acquire(timeout=0)
    with pytest.raises(redlease.LockLostError) as info:
        lock.release()
    assert info.value.reason == "expired"


def test_force_unlock(make_client):
    a, b = make_client(), make_client()
    a.lock("forced").acquire()
    assert b.lock("forced").force_unlock() is True
    assert b.lock("forced").force_unlock() is False
    assert b.lock("forced").acquire(timeout=0)


def test_bytes_names_and_binary_safety(client, raw):
    name = b"bin\x00\xffname"
    lock = client.lock(name)
    with lock:
        assert lock.name == name
        assert raw("EXISTS", name) == 1
        assert raw("EXISTS", b"bin") == 0


def test_str_names_are_utf8(client, raw):
    with client.lock("zamówienie:ü"):
        assert raw("EXISTS", "zamówienie:ü".encode()) == 1


def test_client_context_manager(server):
    with redlease.Client(server.url) as c:
        with c.lock("cm"):
            pass
    assert c.closed


def test_exception_hierarchy():
    for cls in (redlease.LockTimeout, redlease.NotOwnedError, redlease.LockLostError,
                redlease.ConnectionError, redlease.ServerError, redlease.ClientClosedError):
        assert issubclass(cls, redlease.LockError)
    assert issubclass(redlease.NotOwnedError, RuntimeError)
    assert issubclass(redlease.ConnectionError, ConnectionError)


def test_url_password_is_not_shown(server):
    c = redlease.Client("redis://user:s3cret@127.0.0.1:1/0")
    assert "s3cret" not in repr(c)
    c.close()
