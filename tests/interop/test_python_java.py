"""redlease (Python, and Lua where a second waiter helps) and a real Redisson on one lock name:
they exclude each other, read each other's holds the same way, and wake each other by pub/sub."""

import time

import pytest

import redlease
from kit import PyThread, subscribers, wait_subscribed
from luapeer import LuaFailure
from redisson import JavaError
from testkit import LostRecorder, wait_for

LEASE_MS = 20_000          # Java's explicit lease while others wait: far longer than any wake-up
WAKE_BOUND = LEASE_MS / 4 / 1000

# Lock names that take each branch of the naming rules: plain (derived keys tagged {name}), the
# user's own hash tag (derived keys get `:` only), and non-ASCII bytes with spaces.
NAMES = ["plain", "orders:{42}:x", "ключ 🔒 two words"]


@pytest.fixture
def py_thread():
    t = PyThread()
    yield t
    t.close()


@pytest.mark.parametrize("suffix", NAMES)
def test_java_hold_keeps_python_and_lua_out(java, raw, client, lua, name, suffix):
    name = f"{name}:{suffix}"
    jl = java.lock(name)
    jl.lock("t1", LEASE_MS)
    owner = java.owner("t1")
    assert raw("HGETALL", name) == [owner, b"1"]

    lock = client.lock(name)
    assert lock.acquire(blocking=False) is False
    started = time.monotonic()
    assert lock.acquire(timeout=0.5) is False
    assert time.monotonic() - started >= 0.45
    assert lock.locked() is True
    assert lock.held() is False
    assert lock.hold_count == 0

    peer = lua()
    with pytest.raises(LuaFailure) as failure:
        peer.acquire(name, timeout=0)
    assert failure.value.code == "timeout", failure.value.message
    assert peer.call("held", name) is False

    assert raw("HGETALL", name) == [owner, b"1"]  # nobody else wrote anything
    jl.unlock("t1")
    assert raw("EXISTS", name) == 0


@pytest.mark.parametrize("suffix", NAMES[:2])
def test_java_unlock_wakes_python_and_lua_waiters(java, raw, client, lua, py_thread, name, suffix):
    name = f"{name}:{suffix}"
    jl = java.lock(name)
    jl.lock("t1", LEASE_MS)

    lock = client.lock(name)

    def wait_and_hold():
        acquired = lock.acquire(timeout=15)
        holding_since = time.monotonic()
        if acquired:
            lock.release()
        return acquired, holding_since

    py_waiter = py_thread.start(wait_and_hold)
    peer = lua()
    lua_waiter = peer.start("acquire", name, 15, None)
    wait_subscribed(raw, name, 2)  # each redlease client subscribed once to Redisson's channel
    time.sleep(0.1)
    assert not py_waiter.done() and not lua_waiter.done()

    unlock = jl.start("t1", "unlock")
    unlock.result(10)
    assert lua_waiter.result(WAKE_BOUND + 5) is True
    peer.release(name)
    (py_acquired, py_holding), _ = py_waiter.result(WAKE_BOUND + 5)
    assert py_acquired is True

    # From sending Java's unlock (its reply can come after the waiters woke) to each one holding.
    py_delay = py_holding - unlock.sent
    lua_delay = lua_waiter.received - unlock.sent
    assert py_delay < WAKE_BOUND, f"Python waiter held {py_delay:.3f} s after Java's unlock"
    assert lua_delay < WAKE_BOUND, f"Lua waiter held {lua_delay:.3f} s after Java's unlock"
    assert wait_for(lambda: raw("EXISTS", name) == 0)


def test_python_watchdog_hold_keeps_java_out_release_wakes_java(java, raw, make_client, name):
    watchdog = 1.0
    lock = make_client(watchdog_timeout=watchdog).lock(name)
    assert lock.acquire()
    jl = java.lock(name)

    started = time.monotonic()
    tries = 0
    while time.monotonic() - started < 3.5 * watchdog:
        assert jl.try_lock("t1", 0) is False, \
            f"Java got in after {time.monotonic() - started:.2f} s"
        tries += 1
        time.sleep(0.1)
    assert tries >= 10
    assert 0 < raw("PTTL", name) <= 1000  # the watchdog's lease, renewed all along
    assert lock.held() and not lock.lost

    waiter = jl.start("t2", "lock")
    wait_subscribed(raw, name, 1)
    assert not waiter.done()
    released = time.monotonic()
    lock.release()
    waiter.result(5)
    # Without the pub/sub wake-up Java would retry when the 1 s lease ran out.
    delay = waiter.received - released
    assert delay < 0.5, f"Java's lock() returned {delay:.3f} s after the release"
    assert jl.is_held_by_current_thread("t2") is True
    jl.unlock("t2")


def test_python_release_wakes_java_lock_with_a_long_lease(java, raw, client, name):
    lock = client.lock(name)
    assert lock.acquire(lease=LEASE_MS / 1000)
    jl = java.lock(name)
    waiter = jl.start("t1", "lock")
    timed = jl.start("t2", "tryLock", 15_000)
    wait_subscribed(raw, name, 1)
    time.sleep(0.1)
    assert not waiter.done() and not timed.done()

    released = time.monotonic()
    lock.release()
    # One unlock message lets one Java waiter in; its unlock lets the other in.
    first, second = (waiter, timed)
    done = wait_for(lambda: waiter.done() or timed.done(), WAKE_BOUND)
    assert done, "no Java waiter woke after the release"
    if timed.done() and not waiter.done():
        first, second = timed, waiter
    assert first.received - released < WAKE_BOUND
    holder = "t1" if first is waiter else "t2"
    if first is timed:
        assert timed.result() is True
    jl.unlock(holder)
    second.result(WAKE_BOUND)
    other = "t2" if holder == "t1" else "t1"
    assert jl.is_held_by_current_thread(other) is True
    jl.unlock(other)
    assert raw("EXISTS", name) == 0


def test_java_reentrant_hold_reads_the_same_from_python(java, raw, client, name):
    jl = java.lock(name)
    jl.lock("t1", LEASE_MS)
    jl.lock("t1", LEASE_MS)
    owner = java.owner("t1")
    assert raw("HGET", name, owner) == b"2"
    assert raw("HGETALL", name) == [owner, b"2"]
    assert jl.get_hold_count("t1") == 2
    assert jl.get_hold_count("t2") == 0

    lock = client.lock(name)
    assert lock.locked() is True
    assert lock.held() is False
    assert lock.hold_count == 0
    java_ttl = jl.remain_time_to_live("t1")
    python_left = lock.remaining()
    assert LEASE_MS - 5000 < java_ttl <= LEASE_MS
    assert abs(python_left * 1000 - java_ttl) < 1000
    with pytest.raises(redlease.NotOwnedError):
        lock.release()

    jl.unlock("t1")
    assert raw("HGET", name, owner) == b"1"
    assert lock.acquire(blocking=False) is False
    jl.unlock("t1")
    assert lock.locked() is False
    assert lock.remaining() is None
    assert jl.remain_time_to_live("t1") == -2
    assert lock.acquire(blocking=False) is True
    lock.release()


def test_python_reentrant_hold_reads_the_same_from_java(java, raw, client, name):
    lock = client.lock(name)
    assert lock.acquire(lease=LEASE_MS / 1000)
    assert lock.acquire(lease=LEASE_MS / 1000)
    assert lock.hold_count == 2
    fields = raw("HGETALL", name)
    assert len(fields) == 2 and fields[1] == b"2"
    assert fields[0].startswith(client.id.encode() + b":")

    jl = java.lock(name)
    assert jl.is_locked("t1") is True
    assert jl.is_held_by_current_thread("t1") is False
    assert jl.get_hold_count("t1") == 0
    java_ttl = jl.remain_time_to_live("t1")
    assert LEASE_MS - 5000 < java_ttl <= LEASE_MS
    assert abs(lock.remaining() * 1000 - java_ttl) < 1000
    assert jl.try_lock("t1", 0) is False

    with pytest.raises(JavaError) as thrown:
        jl.unlock("t1")
    assert thrown.value.cls == "java.lang.IllegalMonitorStateException"
    assert raw("HGETALL", name) == fields  # Java's failed unlock changed nothing

    lock.release()
    assert raw("HGET", name, fields[0]) == b"1"
    assert jl.is_locked("t1") is True
    lock.release()
    assert jl.is_locked("t1") is False
    assert jl.try_lock("t1", 0) is True
    jl.unlock("t1")


def test_java_unlock_from_another_java_thread_is_refused(java, raw, name):
    jl = java.lock(name)
    jl.lock("t1", LEASE_MS)
    owner = java.owner("t1")
    with pytest.raises(JavaError) as thrown:
        jl.unlock("t2")
    assert thrown.value.cls == "java.lang.IllegalMonitorStateException"
    assert raw("HGETALL", name) == [owner, b"1"]
    jl.unlock("t1")
    with pytest.raises(JavaError) as thrown:
        jl.unlock("t1")  # released already
    assert thrown.value.cls == "java.lang.IllegalMonitorStateException"


def test_java_force_unlock_of_a_python_watchdog_hold_is_reported_lost(java, raw, make_client, name):
    watchdog = 1.0
    lost = LostRecorder()
    lock = make_client(watchdog_timeout=watchdog, on_lost=lost).lock(name)
    assert lock.acquire()
    jl = java.lock(name)
    assert jl.try_lock("t1", 0) is False

    forced = time.monotonic()
    assert jl.force_unlock("t1") is True
    assert wait_for(lambda: lock.lost, 5), "the Python hold was not reported lost"
    noticed = time.monotonic() - forced
    assert noticed < watchdog / 3 + 1.0, f"loss noticed after {noticed:.2f} s"
    assert lock.lost_reason == "deleted"
    assert lost.event.wait(5)
    assert [(n, r) for n, r, _ in lost.calls] == [(name, "deleted")]
    with pytest.raises(redlease.LockLostError) as raised:
        lock.release()
    assert raised.value.reason == "deleted"

    # The lock is free for Java, and stays Java's: the lost Python hold is never renewed again.
    waiter = jl.start("t2", "lock")
    waiter.result(5)
    time.sleep(2 * watchdog)
    assert jl.is_held_by_current_thread("t2") is True
    assert jl.get_hold_count("t2") == 1
    jl.unlock("t2")


def test_java_force_unlock_wakes_a_java_waiter_and_the_python_hold_is_lost(
        java, raw, make_client, name):
    watchdog = 1.0
    lost = LostRecorder()
    lock = make_client(watchdog_timeout=watchdog, on_lost=lost).lock(name)
    assert lock.acquire()
    jl = java.lock(name)
    waiter = jl.start("t2", "lock")
    wait_subscribed(raw, name, 1)
    time.sleep(0.1)
    assert not waiter.done()

    forced = jl.start("t1", "forceUnlock")
    assert forced.result(5) is True
    waiter.result(5)
    assert waiter.received - forced.sent < 0.5 * watchdog  # the force unlock's message woke it
    assert wait_for(lambda: lock.lost, 5)
    # Deleted, and most likely Java's by the time the watchdog looks: either is the truth.
    assert lock.lost_reason in ("deleted", "owner_changed")
    with pytest.raises(redlease.LockLostError):
        lock.release()
    assert jl.is_held_by_current_thread("t2") is True
    jl.unlock("t2")
    assert wait_for(lambda: subscribers(raw, name) == 0)  # no subscription left behind
