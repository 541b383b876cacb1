"""redlease's Lua rock and a real Redisson on one lock name: the Lua side's holds keep Java out
and its release wakes a blocked Java lock(); each reads the other's holds the same way."""

import time

import pytest

from kit import wait_subscribed
from luapeer import LuaFailure
from redisson import JavaError
from testkit import wait_for

LEASE = 20.0


def test_lua_hold_keeps_java_out_and_release_wakes_java(java, raw, lua, name):
    peer = lua()  # watchdog mode with the default 30 s lease
    assert peer.acquire(name) is True
    fields = raw("HGETALL", name)
    assert len(fields) == 2 and fields[1] == b"1"
    assert fields[0].startswith(peer.id.encode() + b":")

    jl = java.lock(name)
    assert jl.try_lock("t1", 0) is False
    assert jl.try_lock("t1", 300) is False
    assert jl.is_locked("t1") is True
    waiter = jl.start("t2", "lock")
    wait_subscribed(raw, name, 1)
    time.sleep(0.1)
    assert not waiter.done()

    release = peer.start("release", name)
    assert release.result(10) is True
    waiter.result(10)
    delay = waiter.received - release.sent
    assert delay < 30 / 4, f"Java's lock() returned {delay:.3f} s after the Lua release"
    assert jl.is_held_by_current_thread("t2") is True
    with pytest.raises(LuaFailure) as failure:
        peer.acquire(name, timeout=0)
    assert failure.value.code == "timeout"
    jl.unlock("t2")
    assert peer.acquire(name, timeout=0) is True
    assert peer.release(name) is True


def test_lua_watchdog_hold_keeps_java_out_past_its_lease(java, raw, lua, name):
    watchdog = 1.0
    peer = lua(watchdog_timeout=watchdog)
    assert peer.acquire(name) is True
    jl = java.lock(name)
    started = time.monotonic()
    while time.monotonic() - started < 3.5 * watchdog:
        assert jl.try_lock("t1", 0) is False, \
            f"Java got in after {time.monotonic() - started:.2f} s"
        time.sleep(0.1)
    assert 0 < raw("PTTL", name) <= 1000
    assert peer.call("lost", name) is False
    assert peer.release(name) is True
    assert jl.try_lock("t1", 0) is True
    jl.unlock("t1")


def test_lua_reentrant_hold_reads_the_same_from_java(java, raw, lua, name):
    peer = lua()
    assert peer.acquire(name, lease=LEASE) is True
    assert peer.acquire(name, lease=LEASE) is True
    assert peer.call("hold_count", name) == 2
    fields = raw("HGETALL", name)
    assert len(fields) == 2 and fields[1] == b"2"

    jl = java.lock(name)
    assert jl.is_locked("t1") is True
    assert jl.is_held_by_current_thread("t1") is False
    assert jl.get_hold_count("t1") == 0
    java_ttl = jl.remain_time_to_live("t1")
    assert LEASE * 1000 - 5000 < java_ttl <= LEASE * 1000
    assert abs(peer.call("remaining", name) * 1000 - java_ttl) < 1000
    with pytest.raises(JavaError) as thrown:
        jl.unlock("t1")
    assert thrown.value.cls == "java.lang.IllegalMonitorStateException"
    assert raw("HGETALL", name) == fields

    assert peer.release(name) is True
    assert raw("HGET", name, fields[0]) == b"1"
    assert jl.is_locked("t1") is True
    assert peer.release(name) is True
    assert jl.is_locked("t1") is False


def test_java_reentrant_hold_reads_the_same_from_lua(java, raw, lua, name):
    jl = java.lock(name)
    jl.lock("t1", int(LEASE * 1000))
    jl.lock("t1", int(LEASE * 1000))
    assert raw("HGETALL", name) == [java.owner("t1"), b"2"]

    peer = lua()
    assert peer.call("locked", name) is True
    assert peer.call("held", name) is False
    assert peer.call("hold_count", name) == 0
    assert abs(peer.call("remaining", name) * 1000 - jl.remain_time_to_live("t1")) < 1000
    with pytest.raises(LuaFailure) as failure:
        peer.release(name)
    assert failure.value.code == "not_owned"
    jl.unlock("t1")
    jl.unlock("t1")
    assert peer.call("locked", name) is False
    assert peer.call("remaining", name) is False


def test_java_force_unlock_of_a_lua_watchdog_hold_is_reported_lost(java, raw, lua, name):
    watchdog = 1.0
    peer = lua(watchdog_timeout=watchdog)
    assert peer.acquire(name) is True
    jl = java.lock(name)
    assert jl.force_unlock("t1") is True
    assert wait_for(lambda: peer.call("lost", name) == (True, "deleted"), watchdog / 3 + 2)
    with pytest.raises(LuaFailure) as failure:
        peer.release(name)
    assert failure.value.code == "lost"
    assert jl.try_lock("t2", 5000) is True
    jl.unlock("t2")

