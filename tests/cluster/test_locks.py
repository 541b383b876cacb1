"""Locks on a Redis Cluster (3 masters, 3 replicas) through a redis+cluster:// URL: each lock at
the master serving its slot, exclusion, reentrancy, waits woken by sharded pub/sub, the watchdog
renewing at every master, every kind, hash tags, and bad input."""

import threading
import time

import pytest
from clusterkit import names_on_every_master, node_call, raw_at

import redlease
from redlease.testing import RedisServer
from testkit import LostRecorder, wait_for


def test_locks_live_at_the_master_of_their_slot_and_exclude(cluster, clients, spread):
    a, b = clients(cluster.url), clients(cluster.url)
    for name in spread:
        lock = a.lock(name)
        assert lock.acquire(timeout=0)
        assert not b.lock(name).acquire(timeout=0)
        # The hash is at the master serving the name's slot (and nowhere else is asked).
        fields = node_call(cluster, name, "HGETALL", name)
        assert fields[0].startswith(a.id.encode()) and fields[1] == b"1"
    masters = {cluster.node_of_slot(cluster.keyslot(n)).port for n in spread}
    assert len(masters) == 3
    for name in spread:
        a.lock(name).release()
        assert b.lock(name).acquire(timeout=0)
        b.lock(name).release()


def test_reentrancy_counts_at_each_master(cluster, clients, spread):
    c = clients(cluster.url)
    for name in spread[::3]:
        lock = c.lock(name)
        assert lock.acquire(timeout=0) and lock.acquire(timeout=0)
        assert lock.hold_count == 2
        assert sorted(node_call(cluster, name, "HVALS", name)) == [b"2"]
        lock.release()
        assert lock.held() and node_call(cluster, name, "HVALS", name) == [b"1"]
        lock.release()
        assert not lock.locked()


def _wait_in_thread(lock, timeout):
    result = {}

    def run():
        start = time.monotonic()
        result["acquired"] = lock.acquire(timeout=timeout)
        result["after"] = time.monotonic() - start
        if result["acquired"]:
            lock.release()

    t = threading.Thread(target=run)
    t.start()
    return t, result


def test_waiters_on_every_master_are_woken_by_sharded_messages(cluster, clients, spread):
    holder, waiting = clients(cluster.url), clients(cluster.url)
    names = spread[::3]  # one per master
    for name in names:
        assert holder.lock(name).acquire(timeout=0)
    waits = [_wait_in_thread(waiting.lock(name), 20) for name in names]
    channels = [f"redisson_lock__channel:{{{n}}}" for n in names]
    # Each waiter listens with SSUBSCRIBE at the master of its slot (as Redisson on Redis 7).
    assert wait_for(lambda: all(
        node_call(cluster, ch, "PUBSUB", "SHARDNUMSUB", ch)[1] == 1 for ch in channels), 5)
    assert waiting.stats()["subscriptions"] == 3
    for name in names:
        holder.lock(name).release()
    for t, result in waits:
        t.join(20)
        # The lease is 30 s: a wake-up well before it came from the release's SPUBLISH.
        assert result["acquired"] and result["after"] < 10


def test_watchdog_renews_at_every_master_one_round_trip_each(cluster, clients, spread):
    lost = LostRecorder()
    c = clients(cluster.url, watchdog_timeout=1.5, on_lost=lost)
    for name in spread:
        assert c.lock(name).acquire(timeout=0)
    time.sleep(0.6)
    before = c.stats()
    time.sleep(3.0)  # six periods of 0.5 s, each twice the lease's third
    after = c.stats()
    rounds = after["renew_rounds"] - before["renew_rounds"]
    assert rounds >= 3
    assert after["last_round_nodes"] == 3 and after["last_round_holds"] == len(spread)
    assert after["renew_round_trips"] - before["renew_round_trips"] == 3 * rounds
    for name in spread:
        assert 0 < node_call(cluster, name, "PTTL", name) <= 1500
        c.lock(name).release()
    assert not lost.calls


@pytest.mark.parametrize("kind", ["fair", "fenced", "rw"])
def test_every_kind_excludes_and_wakes_across_masters(cluster, clients, kind):
    names = names_on_every_master(cluster, f"kind-{kind}", 1)
    a, b = clients(cluster.url), clients(cluster.url)

    def make(client, name):
        if kind == "fair":
            return client.fair_lock(name)
        if kind == "fenced":
            return client.fenced_lock(name)
        return client.rw_lock(name).write

    tokens = []
    for name in names:
        first = make(a, name)
        assert first.acquire(timeout=0)
        if kind == "fenced":
            tokens.append(first.token)
        assert not make(b, name).acquire(timeout=0)
        if kind == "rw":  # readers exclude the writer too, and share among themselves
            assert not b.rw_lock(name).read.acquire(timeout=0)
        t, result = _wait_in_thread(make(b, name), 20)
        time.sleep(0.3)
        first.release()
        t.join(20)
        assert result["acquired"] and result["after"] < 10
    if kind == "fenced":
        assert all(t and t > 0 for t in tokens)


def test_names_with_their_own_hash_tag_share_a_slot(cluster, clients):
    c = clients(cluster.url)
    tagged = ["order{42}:a", "order{42}:b", "{42}"]
    slot = cluster.keyslot("42")
    for name in tagged:
        assert c.lock(name).acquire(timeout=0)
        assert cluster.keyslot(name) == slot
        assert node_call(cluster, name, "EXISTS", name) == 1
    # The companion keys carry the same tag: a fair lock's queue and timeout sit in that slot.
    fair = c.fair_lock("order{42}:fair")
    assert fair.acquire(timeout=0)
    for key in ("redisson_lock_queue:order{42}:fair", "redisson_lock__channel:order{42}:fair"):
        assert cluster.keyslot(key) == slot
    fair.release()
    for name in tagged:
        c.lock(name).release()


def test_refreshes_are_rate_limited_when_many_calls_start_at_once(cluster, clients, spread):
    c = clients(cluster.url)
    threads = [threading.Thread(target=lambda n=n: c.lock(n).acquire(timeout=0) and
                                c.lock(n).release()) for n in spread * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 36 concurrent first calls, one map.
    assert c.stats()["cluster_refreshes"] == 1


def test_seeds_where_no_node_answers(clients):
    dead = [RedisServer().start() for _ in range(2)]
    ports = [d.port for d in dead]
    for d in dead:
        d.close()
    c = clients("redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in ports),
                connect_timeout=1)
    with pytest.raises(redlease.ConnectionError, match="no cluster node answered"):
        c.lock("x").acquire(timeout=0)


def test_a_node_not_in_cluster_mode(clients):
    with RedisServer() as plain:
        c = clients(f"redis+cluster://127.0.0.1:{plain.port}")
        with pytest.raises(ValueError, match="not in cluster mode"):
            c.lock("x").acquire(timeout=0)
        r = raw_at(plain.port)
        try:
            assert r("DBSIZE") == 0  # nothing was written
        finally:
            r.close()


@pytest.mark.parametrize("name", ["a}b", "x{}y", "x{}{y}"])
def test_names_whose_keys_would_fall_in_different_slots(cluster, clients, name):
    # Redisson's own rule puts such a name's keys in two slots (its unlock fails with CROSSSLOT):
    # redlease refuses the name on a cluster before anything is sent.
    c = clients(cluster.url)
    with pytest.raises(ValueError, match="cannot be used on a Redis Cluster"):
        c.lock(name)
    with pytest.raises(ValueError, match="cannot be used on a Redis Cluster"):
        c.semaphore(name)
    assert c.stats()["cluster_refreshes"] == 0  # nothing was sent


@pytest.mark.parametrize("url", ["redis+cluster://127.0.0.1:7000/0",
                                 "redis+cluster://127.0.0.1:7000,127.0.0.1:7001/3",
                                 "redis+cluster://127.0.0.1:7000,,127.0.0.1:7001",
                                 "redis+cluster://127.0.0.1:notaport"])
def test_bad_cluster_urls(url):
    with pytest.raises(ValueError):
        redlease.Client(url)


def test_clusterdown_is_retried_until_the_command_timeout(cluster, clients):
    name = "{down}lock"
    slot = cluster.keyslot("down")
    owner = cluster.node_of_slot(slot)
    c = clients(cluster.url, command_timeout=1.5)
    assert c.lock(name).acquire(timeout=0)  # the map is known
    c.lock(name).release()
    # The slot unassigned at its owner: it answers CLUSTERDOWN (Hash slot not served).
    assert cluster.cli(owner.port, "CLUSTER", "DELSLOTS", str(slot)) == "OK"
    try:
        started = time.monotonic()
        with pytest.raises(redlease.ServerError, match="CLUSTERDOWN"):
            c.lock(name).acquire(timeout=0)
        assert 1.0 < time.monotonic() - started < 10  # retried for its command timeout
        # A slot served again within a call's retries: the call succeeds.
        result = {}
        t = threading.Thread(target=lambda: result.update(ok=c.lock(name).acquire(timeout=0)))
        t.start()
        time.sleep(0.5)
    finally:
        assert cluster.cli(owner.port, "CLUSTER", "ADDSLOTS", str(slot)) == "OK"
    t.join(10)
    assert result["ok"]
    # (the hold belonged to the thread, which ended: it was released)
    assert wait_for(lambda: not c.lock(name).locked(), 5)


def test_fencing_at_the_master_of_each_slot(cluster, clients):
    """fenced_set keeps its fence in the key's slot (no CROSSSLOT) at each master, and a fenced
    force unlock advances the counter where the lock lives."""
    from redlease.fencing import StaleTokenError, fenced_set

    a, b = clients(cluster.url), clients(cluster.url)
    for name in names_on_every_master(cluster, "fence", 1):
        old = a.fenced_lock(name).acquire_token()
        assert b.fenced_lock(name).force_unlock()
        token_key = "redisson_lock_token:{" + name + "}"
        assert int(node_call(cluster, name, "GET", token_key)) == old + 1
        newer = b.fenced_lock(name).acquire_token()
        data = name + ":data"
        assert fenced_set(b, data, "newer", newer) == 0
        with pytest.raises(StaleTokenError):
            fenced_set(a, data, "old", old)
        assert node_call(cluster, data, "GET", data) == b"newer"
        b.fenced_lock(name).release()
