"""A holder that dies frees the lock for the other side within one watchdog timeout: a redlease
Python process killed with SIGKILL (Redisson gets in), and a Redisson JVM killed with SIGKILL
(redlease's Python and Lua waiters get in). Nothing is published when a lease runs out: the
waiters find out by retrying when the holder's PTTL has passed."""

import os
import subprocess
import sys
import time

import pytest

from kit import PyThread, wait_subscribed
from luapeer import LuaFailure
from redisson import PeerDied, Redisson
from testkit import wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
WATCHDOG = 1.0
MARGIN = 2.0  # a loaded 2-core CI machine


def test_killed_python_holder_frees_the_lock_for_java(java, raw, server, name):
    holder = subprocess.Popen([sys.executable, os.path.join(HERE, "py_holder.py"), server.url,
                               name.encode().hex(), str(WATCHDOG)],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().split()
        assert line[:1] == ["held"], line
        fields = raw("HGETALL", name)
        assert fields[0].startswith(line[1].encode() + b":") and fields[1] == b"1"

        jl = java.lock(name)
        time.sleep(2 * WATCHDOG)  # outlives its first lease: the holder's watchdog renews it
        assert jl.try_lock("t1", 0) is False
        waiter = jl.start("t2", "lock")
        wait_subscribed(raw, name, 1)
        time.sleep(0.1)
        assert not waiter.done()

        holder.kill()
        killed = time.monotonic()
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()
    waiter.result(WATCHDOG + MARGIN + 5)
    delay = waiter.received - killed
    assert delay < WATCHDOG + MARGIN, f"Java got in {delay:.2f} s after the holder was killed"
    assert jl.is_held_by_current_thread("t2") is True
    jl.unlock("t2")


def test_killed_redisson_holder_frees_the_lock_for_python_and_lua(server, raw, client, lua, name):
    java = Redisson(server.url, watchdog_ms=int(WATCHDOG * 1000))
    py = PyThread()
    try:
        jl = java.lock(name)
        jl.lock("t1")  # watchdog mode: Redisson renews every third of its 1 s timeout
        owner = java.owner("t1")
        lock = client.lock(name)
        started = time.monotonic()
        while time.monotonic() - started < 3.5 * WATCHDOG:
            assert lock.acquire(blocking=False) is False
            time.sleep(0.1)
        assert raw("HGETALL", name) == [owner, b"1"]
        assert 0 < raw("PTTL", name) <= 1000

        def wait_and_hold():
            acquired = lock.acquire(timeout=WATCHDOG + MARGIN + 5)
            holding = time.monotonic()
            if acquired:
                lock.release()
            return acquired, holding

        py_waiter = py.start(wait_and_hold)
        peer = lua()
        lua_waiter = peer.start("acquire", name, WATCHDOG + MARGIN + 5, None)
        wait_subscribed(raw, name, 2)
        assert not py_waiter.done() and not lua_waiter.done()

        java.kill()
        killed = time.monotonic()
        with pytest.raises(PeerDied):
            jl.is_locked("t1")
        assert lua_waiter.result(WATCHDOG + MARGIN + 5) is True
        peer.release(name)
        (acquired, py_holding), _ = py_waiter.result(WATCHDOG + MARGIN + 5)
        assert acquired is True
        for who, when in (("Python", py_holding), ("Lua", lua_waiter.received)):
            delay = when - killed
            assert delay < WATCHDOG + MARGIN, f"{who} got in {delay:.2f} s after the kill"
        assert wait_for(lambda: raw("EXISTS", name) == 0)
        with pytest.raises(LuaFailure) as failure:
            peer.release(name)
        assert failure.value.code == "not_owned"
    finally:
        py.close()
        java.close()
