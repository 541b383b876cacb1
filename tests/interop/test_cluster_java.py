"""Redisson (useClusterServers()) and redlease (Python, and Lua through the C rock) on one Redis
Cluster (3 masters, 3 replicas): on names served by each master, each keeps the other out and
wakes the other's waiters (Redisson's default on Redis 7 clusters is sharded pub/sub:
SSUBSCRIBE/SPUBLISH, and so is redlease's), for RLock and the fair lock; and both put a lock's
keys in the same slot, for names with and without their own hash tag."""

import os
import sys
import threading
import time

import pytest

import redlease
from redlease.testing import RedisCluster
from testkit import Raw, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
from clusterkit import names_on_every_master  # noqa: E402

from luapeer import LuaPeer  # noqa: E402
from redisson import Redisson  # noqa: E402

QUICK = 30 / 4  # a wake-up well before a 30 s lease runs out came from a message


@pytest.fixture(scope="module")
def cluster():
    with RedisCluster() as c:
        yield c


@pytest.fixture(scope="module")
def cjava(cluster):
    driver = Redisson(cluster.url)
    yield driver
    driver.close()


@pytest.fixture
def java(cjava):
    cjava.new_scope()
    return cjava


@pytest.fixture
def py(cluster):
    c = redlease.Client(cluster.url)
    yield c
    c.close()


def shard_subscribers(cluster, channel):
    """SSUBSCRIBE subscribers of `channel` at the master serving it."""
    node = cluster.node_of_slot(cluster.keyslot(channel))
    r = Raw(f"redis://127.0.0.1:{node.port}")
    try:
        return int(r("PUBSUB", "SHARDNUMSUB", channel)[1])
    finally:
        r.close()


def channel_of(name, kind):
    tagged = name if "{" in name else "{" + name + "}"
    return f"redisson_lock__channel:{tagged}"


@pytest.mark.parametrize("kind", ["lock", "fair"])
def test_python_and_redisson_exclude_and_wake_each_other(cluster, java, py, kind):
    for name in names_on_every_master(cluster, f"cj-{kind}", 1):
        mine = py.lock(name) if kind == "lock" else py.fair_lock(name)
        theirs = java.lock(name, kind)
        # redlease holds: Redisson is kept out, and its waiter is woken by the release.
        assert mine.acquire(timeout=0)
        assert theirs.try_lock("t1", 0) is False
        waiter = theirs.start("t2", "lock")
        if kind == "lock":  # Redisson waits with SSUBSCRIBE at the slot's master
            channel = channel_of(name, kind)
            assert wait_for(lambda ch=channel: shard_subscribers(cluster, ch) == 1, 10)
        else:
            time.sleep(1.0)  # its own channel (…:<owner>): wait until it is queued
        assert not waiter.done()
        released = time.monotonic()
        mine.release()
        waiter.result(15)
        assert waiter.received - released < QUICK
        # Redisson holds: redlease is kept out, and its waiter is woken by Redisson's unlock.
        assert mine.acquire(timeout=0) is False
        got = {}

        def wait(lock=mine, theirs=theirs, got=got):  # a hold is its thread's: checked, released
            got["ok"] = lock.acquire(timeout=20)
            got["at"] = time.monotonic()
            got["java_kept_out"] = theirs.try_lock("t3", 0) is False
            lock.release()

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(1.0)
        unlocked = time.monotonic()
        theirs.unlock("t2")
        t.join(20)
        assert got["ok"] and got["at"] - unlocked < QUICK
        assert got["java_kept_out"]


def test_lua_and_redisson_exclude_and_wake_each_other(cluster, java):
    peer = LuaPeer(cluster.url)
    try:
        for name in names_on_every_master(cluster, "cj-lua", 1):
            theirs = java.lock(name)
            assert peer.acquire(name) is True
            assert theirs.try_lock("t1", 0) is False
            waiter = theirs.start("t2", "lock")
            channel = channel_of(name, "lock")
            assert wait_for(lambda ch=channel: shard_subscribers(cluster, ch) == 1, 10)
            release = peer.start("release", name)
            assert release.result(10) is True
            waiter.result(15)
            assert waiter.received - release.sent < QUICK
            pending = peer.start("acquire", name, 20.0, None)
            time.sleep(1.0)
            assert not pending.done()
            unlocked = time.monotonic()
            theirs.unlock("t2")
            assert pending.result(20) is True
            assert pending.received - unlocked < QUICK
            assert peer.release(name) is True
    finally:
        peer.close()


@pytest.mark.parametrize("name", ["plain", "order{42}:x", "{42}", "{a}{b}", "x}{y}"])
def test_both_put_a_lock_in_the_same_slot(cluster, java, py, name):
    theirs, mine = java.lock(name), py.lock(name)
    theirs.lock("t1")
    # redlease finds Redisson's hold: the same key, at the node serving its slot.
    assert mine.locked() and not mine.acquire(timeout=0)
    node = cluster.node_of_slot(cluster.keyslot(name))
    r = Raw(f"redis://127.0.0.1:{node.port}")
    try:
        assert r("EXISTS", name) == 1
    finally:
        r.close()
    theirs.unlock("t1")
    assert mine.acquire(timeout=0)
    assert theirs.try_lock("t2", 0) is False
    mine.release()
