"""Fixed-lease holds as redis-py's Lock has them: extend(seconds), reacquire(), and owner()."""

import threading

import pytest

import redlease


def test_extend_adds_to_the_lease_left(client, raw):
    lock = client.lock("fixed", lease=5)
    assert lock.acquire()
    assert lock.extend(20) is True
    assert 23_000 < raw("PTTL", "fixed") <= 25_000
    lock.release()


def test_extend_replace_ttl_sets_the_lease(client, raw):
    lock = client.lock("fixed", lease=30)
    assert lock.acquire()
    lock.extend(3, replace_ttl=True)
    assert 2_000 < raw("PTTL", "fixed") <= 3_000
    lock.release()


def test_reacquire_restores_the_holds_own_lease(client, raw):
    lock = client.lock("fixed", lease=8)
    assert lock.acquire()
    lock.extend(2, replace_ttl=True)
    assert raw("PTTL", "fixed") <= 2_000
    assert lock.reacquire() is True
    assert 7_000 < raw("PTTL", "fixed") <= 8_000
    lock.release()


def test_watchdog_mode_refuses_extend_and_reacquire(client, raw):
    lock = client.lock("dog")
    with lock:
        before = raw("PTTL", "dog")
        with pytest.raises(ValueError, match="watchdog"):
            lock.extend(100)
        with pytest.raises(ValueError, match="watchdog"):
            lock.reacquire()
        assert raw("PTTL", "dog") <= before  # untouched


def test_not_held_and_bad_arguments_are_refused(client, raw):
    lock = client.lock("fixed", lease=5)
    with pytest.raises(redlease.NotOwnedError):
        lock.extend(1)
    with pytest.raises(redlease.NotOwnedError):
        lock.reacquire()
    assert lock.acquire()
    for bad in (0, -1, float("inf")):
        with pytest.raises(ValueError):
            lock.extend(bad)
    with pytest.raises(TypeError):
        lock.extend("10")  # type: ignore[arg-type]
    # Another thread of the same client holds nothing.
    errors = []

    def other():
        try:
            lock.extend(1)
        except redlease.NotOwnedError as e:
            errors.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1
    assert 4_000 < raw("PTTL", "fixed") <= 5_000
    lock.release()


def test_extend_never_revives_a_deleted_hold(client, raw):
    lock = client.lock("fixed", lease=5)
    assert lock.acquire()
    raw("DEL", "fixed")
    with pytest.raises(redlease.LockLostError) as e:
        lock.extend(10)
    assert e.value.reason == "deleted"
    assert raw("EXISTS", "fixed") == 0
    assert lock.lost
    with pytest.raises(redlease.LockLostError):
        lock.release()


def test_owner_decodes_every_owner(client, make_client):
    other = make_client()
    rw = client.rw_lock("doc", lease=20)
    assert rw.read.acquire()
    assert rw.read.acquire()
    theirs = other.rw_lock("doc", lease=20)
    held, done = threading.Event(), threading.Event()

    def reader():  # a thread that ends releases its holds: it stays until the test is done
        theirs.read.acquire()
        held.set()
        done.wait(30)

    t = threading.Thread(target=reader)
    t.start()
    assert held.wait(10)
    owners = {o.client_id: o for o in rw.read.owner()}
    assert set(owners) == {client.id, other.id}
    mine = owners[client.id]
    assert mine.count == 2 and mine.write is False and mine.local is True
    assert mine.context == str(redlease._core.current_context())
    assert owners[other.id].count == 1
    assert 19 < mine.lease <= 20
    assert client.lock("nobody").owner() == []
    done.set()
    t.join()
