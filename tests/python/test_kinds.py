"""The lock family in Python: fencing tokens, the fair lock, the read/write lock."""

import threading
import time

import pytest

import redlease
from testkit import wait_for


def run_threads(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    return threads


def join_all(threads):
    for t in threads:
        t.join(30)
        assert not t.is_alive()


# ---- fencing tokens ------------------------------------------------------------------------

def test_fenced_tokens_strictly_increase_across_clients_and_reentry(make_client, raw):
    a, b = make_client(), make_client()
    la, lb = a.fenced_lock("ledger"), b.fenced_lock("ledger")
    assert isinstance(la, redlease.FencedLock) and isinstance(la, redlease.Lock)
    assert la.token is None
    assert la.acquire_token() == 1
    with la:  # reentrant: a new, greater token
        assert la.token == 2
        assert lb.acquire_token(blocking=False) is None
        assert lb.acquire_token(timeout=0.1) is None
    assert la.token == 2  # still held once: the latest token stays
    la.release()
    assert la.token is None
    assert lb.acquire_token(timeout=1) == 3
    assert raw("GET", "redisson_lock_token:{ledger}") == b"3"
    lb.release()


def test_fenced_token_is_per_thread(client):
    lock = client.fenced_lock("per-thread")
    seen = {}

    def other():
        seen["before"] = lock.token
        seen["got"] = lock.acquire_token()
        lock.release()

    assert lock.acquire_token() == 1
    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.2)
    assert seen == {"before": None}  # waiting: the main thread holds it
    lock.release()
    t.join(10)
    assert seen["got"] == 2


def test_storage_refuses_a_stale_token(make_client):
    """The pattern docs/python.md shows: storage keeps the greatest token and refuses less."""
    a, b = make_client(), make_client()
    store = {"token": 0, "value": None}

    def write(token, value):
        if token < store["token"]:
            raise PermissionError(f"stale token {token} < {store['token']}")
        store["token"], store["value"] = token, value

    slow = a.fenced_lock("doc", lease=0.3)
    stale = slow.acquire_token()
    time.sleep(0.5)  # the lease ran out while the holder stalled
    fresh_lock = b.fenced_lock("doc")
    fresh = fresh_lock.acquire_token(timeout=2)
    assert fresh is not None and fresh > stale
    write(fresh, "new")
    with pytest.raises(PermissionError):
        write(stale, "old")
    assert store["value"] == "new"
    fresh_lock.release()
    with pytest.raises(redlease.LockLostError):
        slow.release()


# ---- fair lock -----------------------------------------------------------------------------

def test_fair_lock_serves_waiters_in_arrival_order(make_client, raw):
    holder = make_client().fair_lock("fifo")
    holder.acquire()
    order, lock = [], threading.Lock()

    def waiter(i, c):
        def run():
            fl = c.fair_lock("fifo")
            with fl:
                with lock:
                    order.append(i)
                time.sleep(0.05)
        return run

    clients = [make_client() for _ in range(5)]
    threads = []
    for i, c in enumerate(clients):
        threads += run_threads([waiter(i, c)])
        wait_for(lambda n=i + 1: raw("LLEN", "redisson_lock_queue:{fifo}") == n)
    holder.release()
    join_all(threads)
    assert order == [0, 1, 2, 3, 4]
    assert raw("EXISTS", "redisson_lock_queue:{fifo}") == 0


def test_fair_waiter_that_times_out_leaves_the_queue(make_client, raw):
    holder = make_client().fair_lock("leave")
    holder.acquire()
    quitter = make_client().fair_lock("leave")
    assert quitter.acquire(timeout=0.3) is False
    assert raw("EXISTS", "redisson_lock_queue:{leave}") == 0
    assert raw("EXISTS", "redisson_lock_timeout:{leave}") == 0
    with pytest.raises(redlease.LockTimeout):
        with make_client().fair_lock("leave", timeout=0.2):
            pass
    assert raw("EXISTS", "redisson_lock_queue:{leave}") == 0
    holder.release()


def test_fair_lock_has_the_full_lock_api(client):
    fl = client.fair_lock("api")
    with fl:
        assert fl.held() and fl.locked() and fl.hold_count == 1
        assert 25 < fl.remaining() <= 30
        with fl:
            assert fl.hold_count == 2
    assert not fl.locked()
    assert "FairLock" in repr(fl)


# ---- read/write lock -----------------------------------------------------------------------

def test_readers_share_writer_excludes(make_client, raw):
    a, b = make_client(), make_client()
    ra, rb = a.rw_lock("catalog"), b.rw_lock("catalog")
    assert isinstance(ra.read, redlease.ReadLock) and isinstance(ra.write, redlease.WriteLock)
    assert ra.name == "catalog"
    with ra.read:
        with rb.read:
            assert raw("HGET", "catalog", "mode") == b"read"
            assert ra.read.locked() and not ra.write.locked()
            assert rb.write.acquire(timeout=0.2) is False  # a reader never upgrades
        assert ra.write.acquire(blocking=False) is False
    with rb.write:
        assert raw("HGET", "catalog", "mode") == b"write"
        assert raw("HGET", "catalog", f"{b.id}:{redlease._core.current_context()}:write") == b"1"
        assert ra.read.acquire(timeout=0.2) is False
        with rb.read:  # downgrade: the writer may read
            assert rb.read.hold_count == 1
        with rb.write:
            assert rb.write.hold_count == 2
    assert raw("EXISTS", "catalog") == 0


def test_write_release_lets_every_waiting_reader_in(make_client):
    writer = make_client().rw_lock("news")
    writer.write.acquire()
    got, lock = [], threading.Lock()
    released = threading.Event()

    def reader(c):
        def run():
            with c.rw_lock("news").read:
                with lock:
                    got.append(time.monotonic())
                released.wait(10)
        return run

    threads = run_threads([reader(make_client()) for _ in range(6)])
    time.sleep(0.3)
    assert got == []
    at = time.monotonic()
    writer.write.release()
    wait_for(lambda: len(got) == 6)
    assert max(got) - at < 1.0  # all of them, woken at once by the "1" message
    released.set()
    join_all(threads)


def test_watchdog_renews_read_and_write_holds(make_client, raw):
    c = make_client(watchdog_timeout=0.6)
    rw, other = c.rw_lock("renewed"), c.rw_lock("renewed-w")
    rw.read.acquire()
    other.write.acquire()
    time.sleep(2.0)  # three watchdog timeouts
    assert not rw.read.lost and not other.write.lost
    assert raw("EXISTS", "renewed") == 1 and raw("EXISTS", "renewed-w") == 1
    rw.read.release()
    other.write.release()


def test_force_unlock_of_a_read_hold_is_reported_lost(make_client):
    lost = []
    holder = make_client(watchdog_timeout=0.6, on_lost=lambda n, r: lost.append((n, r)))
    rw = holder.rw_lock("reported")
    rw.read.acquire()
    assert make_client().rw_lock("reported").write.force_unlock() is False  # not its mode
    assert make_client().rw_lock("reported").read.force_unlock() is True
    wait_for(lambda: rw.read.lost)
    wait_for(lambda: lost == [("reported", "deleted")])
    with pytest.raises(redlease.LockLostError):
        rw.read.release()


def test_kinds_keep_bad_input_rules(client, raw):
    raw("SET", "plain", "v")
    for lock in (client.fenced_lock("plain"), client.fair_lock("plain"),
                 client.rw_lock("plain").read, client.rw_lock("plain").write):
        with pytest.raises(redlease.ServerError, match="WRONGTYPE"):
            lock.acquire(blocking=False)
        with pytest.raises(redlease.ServerError, match="WRONGTYPE"):
            lock.force_unlock()
    assert raw("GET", "plain") == b"v"
    with pytest.raises(ValueError):
        client.rw_lock("")
    with pytest.raises(TypeError):
        client.fair_lock(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.fenced_lock("x", lease=-1)
