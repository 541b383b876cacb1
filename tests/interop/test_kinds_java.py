"""The other lock kinds against a real Redisson on the same names: fair lock arrival order across
Java and Python waiters, read/write sharing and exclusion both ways, a write unlock waking every
reader on both sides, fencing tokens increasing across both, and force unlocks of one side."""

import time

import pytest

import redlease
from kit import PyThread, prefix
from testkit import LostRecorder, wait_for

LEASE_MS = 20_000


@pytest.fixture
def py_threads():
    made = []

    def make():
        t = PyThread()
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


def test_fair_lock_java_and_python_waiters_in_arrival_order(java, raw, client, py_threads, name):
    queue = prefix("redisson_lock_queue", name)
    holder = java.lock(name, "fair")
    holder.lock("t0", LEASE_MS)
    fair = client.fair_lock(name)

    def py_waiter():
        assert fair.acquire(timeout=30)
        got = time.monotonic()
        time.sleep(0.2)
        fair.release()
        return got

    waiters = []  # (label, future, is_java)
    jl = java.lock(name, "fair")
    for i, side in enumerate(["py1", "java1", "py2", "java2"]):
        if side.startswith("py"):
            waiters.append((side, py_threads().start(py_waiter), False))
        else:
            waiters.append((side, jl.start("t" + side[-1], "tryLock", 30_000, LEASE_MS), True))
        assert wait_for(lambda n=i + 1: raw("LLEN", queue) == n, 10), f"{side} did not queue"

    holder.unlock("t0")
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < 4 and time.monotonic() < deadline:
        for label, future, is_java in waiters:
            if label in got or not future.done():
                continue
            if is_java:
                assert future.result() is True
                got[label] = future.received
                time.sleep(0.2)
                jl.unlock("t" + label[-1])
            else:
                got[label] = future.result()[0]
        time.sleep(0.01)
    assert len(got) == 4, f"only {sorted(got)} acquired"
    assert sorted(got, key=got.get) == ["py1", "java1", "py2", "java2"]
    assert wait_for(lambda: raw("EXISTS", name) == 0 and raw("EXISTS", queue) == 0, 5)


@pytest.mark.parametrize("holder_side", ["python", "java"])
def test_fair_lock_released_after_its_lease_ran_out_hands_over_alike(java, raw, client, name,
                                                                    holder_side):
    """A fair lock released after its lease ran out: redlease answers "lost" and writes no latch
    where Redisson answers "unlocked" and writes one; a queued Redisson waiter sees no
    difference either way: it gets the lock, and the queue is left empty."""
    queue = prefix("redisson_lock_queue", name)
    jl = java.lock(name, "fair")
    if holder_side == "python":
        fair = client.fair_lock(name)
        assert fair.acquire(lease=1.5)
    else:
        jl.lock("t0", 1500)
    waiter = jl.start("t1", "tryLock", 30_000, LEASE_MS)
    assert wait_for(lambda: raw("LLEN", queue) == 1, 10), "the Java waiter did not queue"
    time.sleep(1.7)  # the holder's lease ran out
    if holder_side == "python":
        with pytest.raises(redlease.LockLostError) as info:
            fair.release()
        assert info.value.reason == "expired"
        assert raw("KEYS", prefix("redisson_unlock_latch", name) + b":*") == []
    else:
        try:
            jl.unlock("t0")
        except Exception:  # Redisson refuses an unlock of a lock it no longer holds
            pass
    assert waiter.result(10) is True
    assert raw("HGET", name, java.owner("t1")) == b"1"
    jl.unlock("t1")
    assert wait_for(lambda: raw("EXISTS", name) == 0 and raw("EXISTS", queue) == 0, 5)


def test_read_write_lock_shared_and_exclusive_both_ways(java, raw, client, name):
    jr, jw = java.lock(name, "read"), java.lock(name, "write")
    rw = client.rw_lock(name)

    jr.lock("t1", LEASE_MS)
    jr.lock("t2", LEASE_MS)
    assert rw.read.acquire(blocking=False)  # Java readers and a Python reader share
    assert raw("HGET", name, "mode") == b"read"
    assert rw.write.acquire(timeout=0.3) is False  # a reader never upgrades
    assert rw.write.hold_count == 0
    assert jw.try_lock("t3", 0) is False  # a Java writer waits for the Python reader too
    jr.unlock("t1")
    jr.unlock("t2")
    rw.read.release()
    assert raw("EXISTS", name) == 0

    assert rw.write.acquire(blocking=False)  # a Python writer excludes Java readers and writers
    assert raw("HGET", name, "mode") == b"write"
    assert jr.try_lock("t1", 0) is False
    assert jw.try_lock("t3", 0) is False
    assert jw.is_locked("t3") is True and jr.is_locked("t1") is False
    rw.write.release()

    jw.lock("t3", LEASE_MS)  # and a Java writer excludes Python readers and writers
    assert rw.read.acquire(timeout=0.3) is False
    assert rw.write.acquire(blocking=False) is False
    assert rw.write.locked() is True
    jw.unlock("t3")
    assert raw("EXISTS", name) == 0


def test_java_write_unlock_wakes_every_reader_on_both_sides(java, raw, make_client, py_threads,
                                                            name):
    jw, jr = java.lock(name, "write"), java.lock(name, "read")
    jw.lock("t0", LEASE_MS)

    def py_reader(client):
        rw = client.rw_lock(name)
        assert rw.read.acquire(timeout=15)
        got = time.monotonic()
        time.sleep(0.5)  # still reading when the others get in: readers share
        rw.read.release()
        return got

    py = [py_threads().start(py_reader, make_client()) for _ in range(2)]
    java_readers = [jr.start(t, "tryLock", 15_000, LEASE_MS) for t in ("t1", "t2")]
    time.sleep(0.5)
    assert not any(f.done() for f in py + java_readers)

    unlock = jw.start("t0", "unlock")
    unlock.result(10)
    times = [f.result(10)[0] for f in py]
    for f in java_readers:
        assert f.result(10) is True
        times.append(f.received)
    delays = [t - unlock.sent for t in times]
    assert max(delays) < 1.0, f"readers got in after {delays} s"  # all at once, by the "1" message
    for t in ("t1", "t2"):
        jr.unlock(t)
    assert wait_for(lambda: raw("EXISTS", name) == 0, 5)


def test_fencing_tokens_keep_increasing_across_java_and_python(java, raw, client, name):
    jl = java.lock(name, "fenced")
    lock = client.fenced_lock(name)
    tokens = []
    tokens.append(lock.acquire_token())
    tokens.append(lock.acquire_token())  # reentrant: a new token
    lock.release()
    lock.release()
    # tryLockAndGetToken with an explicit lease (Redisson 4.7's lockAndGetToken(lease) ignores it)
    tokens.append(jl.try_lock_and_get_token("t1", 1000, LEASE_MS))
    tokens.append(jl.try_lock_and_get_token("t1", 1000, LEASE_MS))
    assert lock.acquire_token(blocking=False) is None  # held by Java: no token
    jl.unlock("t1")
    jl.unlock("t1")
    tokens.append(lock.acquire_token(timeout=1))
    lock.release()
    tokens.append(jl.lock_and_get_token("t2"))
    jl.unlock("t2")
    assert tokens == sorted(set(tokens)) and len(tokens) == 6, tokens
    assert tokens[0] == 1
    assert int(raw("GET", prefix("redisson_lock_token", name))) == tokens[-1]


def test_redlease_force_unlock_of_a_java_fenced_hold_advances_the_fence(java, raw, client,
                                                                          name):
    """The fence a forced release advances is Redisson's own token counter: Redisson's next
    token comes after it, and its format (a string counter, no TTL) is unchanged."""
    jl = java.lock(name, "fenced")
    evicted = jl.try_lock_and_get_token("t1", 1000, LEASE_MS)
    assert client.fenced_lock(name).force_unlock()
    key = prefix("redisson_lock_token", name)
    assert int(raw("GET", key)) == evicted + 1
    assert raw("TYPE", key) == "string" and raw("PTTL", key) == -1
    newer = jl.try_lock_and_get_token("t2", 1000, LEASE_MS)
    assert newer == evicted + 2
    jl.unlock("t2")


def test_java_force_unlock_of_each_side_of_a_python_read_hold(java, make_client, name):
    lost = LostRecorder()
    rw = make_client(watchdog_timeout=1.0, on_lost=lost).rw_lock(name)
    assert rw.read.acquire()
    assert java.lock(name, "write").force_unlock("t1") is False  # not in write mode: untouched
    assert rw.read.held()
    assert java.lock(name, "read").force_unlock("t1") is True
    assert lost.event.wait(1.0 + 1.0)  # within one renewal period (plus a margin)
    assert lost.calls[0][:2] == (name, "deleted")
    assert rw.read.lost
