"""The rest of the lock family against a real Redisson on the same names: a semaphore whose 3
permits Java and Python share (never more than 3 holders across both), wake-ups both ways, a
Python permit that expires and goes to Java, count-down latches both ways, RedissonMultiLock and
redlease's multi_lock excluding each other, and the same messages on the same channels."""

import threading
import time

import pytest

from kit import Listener, PyThread, prefix
from testkit import wait_for

LEASE_MS = 20_000


@pytest.fixture
def py_thread():
    t = PyThread()
    yield t
    t.close()


def sc_channel(name):
    return prefix("redisson_sc", name)


def test_semaphore_java_and_python_never_exceed_three_permits(java, raw, make_client, name):
    sem = make_client().semaphore(name)
    assert sem.try_set_permits(3)
    assert java.object("semaphore", name).call("t0", "availablePermits") == 3
    inside = name + ":inside"  # Java's RAtomicLong: a plain counter both sides INCR
    most, failures = [0], []

    def python_holder():
        mine = make_client().semaphore(name)
        for _ in range(30):
            if not mine.acquire(timeout=30):
                failures.append("timeout")
                return
            n = raw_incr(inside, 1)
            most[0] = max(most[0], n)
            time.sleep(0.002)
            raw_incr(inside, -1)
            mine.release()

    lock = threading.Lock()

    def raw_incr(key, by):
        with lock:  # one raw connection, shared by the Python holders
            return raw("INCRBY", key, by)

    jsem = java.object("semaphore", name)
    java_runs = [jsem.start(f"j{i}", "cycle", 30, 2) for i in range(3)]
    threads = [threading.Thread(target=python_holder) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    java_most = [f.result(120) for f in java_runs]
    assert failures == []
    overall = max(most[0], *java_most)
    assert overall <= 3, (most[0], java_most)
    assert overall >= 2  # they did overlap: the cap was what held them back
    assert raw("GET", name) == b"3" and raw("GET", inside) == b"0"


def test_semaphore_release_wakes_the_other_side(java, raw, client, py_thread, name):
    jsem = java.object("semaphore", name)
    sem = client.semaphore(name)
    assert jsem.call("t0", "trySetPermits", 1)
    jsem.call("t0", "acquire")
    waiter = py_thread.start(sem.acquire, 1, 30)  # a Python waiter, woken by Java's release
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", sc_channel(name))[1] == 1, 10)
    released = time.monotonic()
    jsem.call("t0", "release")
    got, at = waiter.result(30)
    assert got is True and at - released < 2.0
    pending = jsem.start("t1", "acquire")  # a Java waiter, woken by Python's release
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", sc_channel(name))[1] >= 1, 10)
    time.sleep(0.2)
    assert not pending.done()
    released = time.monotonic()
    py_thread.call(sem.release)
    pending.result(30)
    assert pending.received - released < 2.0
    assert raw("GET", name) == b"0"


def test_permit_expiring_in_python_goes_to_java(java, raw, client, name):
    sem = client.permit_expirable_semaphore(name)
    jpes = java.object("pes", name)
    assert sem.try_set_permits(1)
    crashed = sem.acquire(0.6)  # a Python worker that never gives it back
    assert jpes.call("t0", "tryAcquire", 0, 10_000) is None
    start = time.monotonic()
    permit = jpes.call("t0", "tryAcquire", 10_000, 10_000)
    waited = time.monotonic() - start
    assert isinstance(permit, str) and len(permit) == 32 and permit != crashed
    assert 0.3 < waited < 8
    with pytest.raises(Exception):  # noqa: B017 - redlease's NotOwnedError: taken back
        sem.release(crashed)
    sem.release(permit)  # ids are shared: Python may give back Java's permit
    assert raw("GET", name) == b"1" and raw("ZCARD", f"{{{name}}}:timeout") == 0


def test_permit_of_java_wakes_python_and_python_permit_released_by_java(java, raw, client,
                                                                           py_thread, name):
    sem = client.permit_expirable_semaphore(name)
    jpes = java.object("pes", name)
    assert jpes.call("t0", "trySetPermits", 1)
    java_permit = jpes.call("t0", "acquire", 30_000)
    waiter = py_thread.start(sem.acquire, 30, 30)
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", sc_channel(name))[1] == 1, 10)
    released = time.monotonic()
    jpes.call("t0", "release", java_permit)
    permit, at = waiter.result(30)
    assert permit is not None and at - released < 2.0
    assert jpes.call("t0", "tryRelease", permit) is True  # Java gives back Python's permit
    assert sem.available_permits() == 1


def test_latch_java_counts_down_python_wait_ends(java, raw, client, py_thread, name):
    latch = client.count_down_latch(name)
    assert latch.try_set_count(2)
    jl = java.object("latch", name)
    assert jl.call("t0", "getCount") == 2
    waiter = py_thread.start(latch.wait, 30)
    channel = f"redisson_countdownlatch__channel__{{{name}}}"
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", channel)[1] == 1, 10)
    jl.call("t0", "countDown")
    time.sleep(0.2)
    assert not waiter.done()
    zero = time.monotonic()
    jl.call("t0", "countDown")
    ok, at = waiter.result(30)
    assert ok is True and at - zero < 2.0
    assert raw("EXISTS", name) == 0


def test_latch_python_counts_down_java_await_ends(java, raw, client, name):
    jl = java.object("latch", name)
    assert jl.call("t0", "trySetCount", 1)
    latch = client.count_down_latch(name)
    assert latch.count() == 1 and latch.try_set_count(5) is False
    pending = jl.start("t1", "await", 30_000)
    channel = f"redisson_countdownlatch__channel__{{{name}}}"
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", channel)[1] == 1, 10)
    time.sleep(0.2)
    assert not pending.done()
    zero = time.monotonic()
    latch.count_down()
    assert pending.result(30) is True
    assert pending.received - zero < 2.0


def test_redisson_multilock_and_python_multi_lock_exclude_each_other(java, raw, client,
                                                                      py_thread, name):
    names = [f"{name}:a", f"{name}:b", f"{name}:c"]
    jmulti = java.object("multi", ",".join(names))
    multi = client.multi_lock(*(client.lock(n) for n in names))
    jmulti.call("t0", "lock", LEASE_MS)
    assert all(raw("EXISTS", n) == 1 for n in names)
    assert py_thread.call(multi.acquire, timeout=0) is False
    assert py_thread.call(multi.acquire, timeout=0.3) is False
    assert py_thread.call(client.lock(names[1]).acquire, timeout=0) is False
    assert all(raw("HLEN", n) == 1 for n in names)  # Java's holds only: nothing left behind
    pending = py_thread.start(multi.acquire, timeout=30)
    time.sleep(0.3)
    released = time.monotonic()
    jmulti.call("t0", "unlock")
    got, at = pending.result(30)
    assert got is True and at - released < 3.0
    assert jmulti.call("t1", "tryLock", 0) is False
    assert jmulti.call("t1", "tryLock", 300, LEASE_MS) is False
    py_thread.call(multi.release)
    assert jmulti.call("t1", "tryLock", 0) is True
    jmulti.call("t1", "unlock")
    assert all(raw("EXISTS", n) == 0 for n in names)


def test_same_messages_on_the_same_channels(java, server, raw, client, name):
    """Each side's semaphore release, permit release, latch set and count-down publish the same
    message on the same channel (PSUBSCRIBE * sees them)."""
    listener = Listener(server.url, "PSUBSCRIBE", "*")
    sem, jsem = client.semaphore(name), java.object("semaphore", name)
    latch_name, pes_name = name + ":latch", name + ":pes"
    latch, jl = client.count_down_latch(latch_name), java.object("latch", latch_name)
    pes, jpes = client.permit_expirable_semaphore(pes_name), java.object("pes", pes_name)

    def published(mark, action):
        listener.mark(mark + "-start")
        action()
        listener.mark(mark + "-end")
        return [(e[2], e[3]) for e in listener.between(mark + "-start", mark + "-end")
                if e[0] == b"pmessage"]

    java_side = [published("j1", lambda: jsem.call("t0", "trySetPermits", 2)),
                 published("j2", lambda: (jsem.call("t0", "acquire"), jsem.call("t0", "release"))),
                 published("j3", lambda: jl.call("t0", "trySetCount", 1)),
                 published("j4", lambda: jl.call("t0", "countDown")),
                 published("j5", lambda: (jpes.call("t0", "trySetPermits", 1),
                                          jpes.call("t0", "release",
                                                    jpes.call("t0", "acquire", 5000))))]
    raw("DEL", name, latch_name, pes_name)  # the same starting point for Python
    python_side = [published("p1", lambda: sem.try_set_permits(2)),
                   published("p2", lambda: (sem.acquire(), sem.release())),
                   published("p3", lambda: latch.try_set_count(1)),
                   published("p4", latch.count_down),
                   published("p5", lambda: (pes.try_set_permits(1),
                                            pes.release(pes.acquire(5))))]
    assert python_side == java_side
    assert java_side[0] == [(sc_channel(name), b"2")]
    assert java_side[1] == [(sc_channel(name), b"2")]  # the count after the release
    latch_channel = f"redisson_countdownlatch__channel__{{{latch_name}}}".encode()
    assert java_side[2] == [(latch_channel, b"1")] and java_side[3] == [(latch_channel, b"0")]
    assert java_side[4] == [(sc_channel(pes_name), b"1")] * 2  # set to 1; released: 1 free
