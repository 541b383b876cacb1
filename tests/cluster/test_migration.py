"""A slot migrated (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while a lock in it is held and
waited on: the holder keeps renewing (through ASK while the keys have moved and the slot not
yet, then through MOVED), releases at the new node, and the waiter is woken there."""

import threading
import time

import pytest
from clusterkit import (
    asking_call,
    close_migration,
    migrate_keys,
    migrate_slot,
    open_migration,
    raw_at,
)

from testkit import LostRecorder, RespError, wait_for


def pttl_at(node, key):
    r = raw_at(node.port)
    try:
        r("ASKING")  # an importing node answers for the slot only after ASKING
        return r("PTTL", key)
    finally:
        r.close()


def shard_subscribers(node, channel):
    r = raw_at(node.port)
    try:
        return r("PUBSUB", "SHARDNUMSUB", channel)[1]
    finally:
        r.close()


def test_slot_migrated_while_held_and_waited_on(own_cluster, clients):
    cluster = own_cluster
    renewed, held = "{mig}renewed", "{mig}held"  # one slot (the tag)
    slot = cluster.keyslot("mig")
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    lost = LostRecorder()
    fast = clients(cluster.url, watchdog_timeout=1.5, on_lost=lost)  # renews every 0.5 s
    slow = clients(cluster.url, on_lost=lost)  # 30 s lease: only a message wakes its waiter early
    waiting = clients(cluster.url)
    assert fast.lock(renewed).acquire(timeout=0)
    assert slow.lock(held).acquire(timeout=0)
    result = {}

    def wait():
        result["acquired"] = waiting.lock(held).acquire(timeout=60)
        result["at"] = time.monotonic()
        waiting.lock(held).release()

    waiter = threading.Thread(target=wait)
    waiter.start()
    channel = "redisson_lock__channel:{mig}held"  # the name has its own tag
    assert wait_for(lambda: shard_subscribers(source, channel) == 1, 5)
    rounds_before = fast.stats()["renew_rounds"]

    def asking_phase():
        time.sleep(1.6)  # three renewal periods answered ASK by the source
        assert pttl_at(target, renewed) > 0

    started = time.monotonic()
    migrate_slot(cluster, slot, source, target, between=asking_phase)
    migrated_in = time.monotonic() - started
    time.sleep(1.6)  # three more periods, answered MOVED by the source, then at the target
    assert fast.stats()["renew_rounds"] - rounds_before >= 5
    assert not lost.calls
    assert 0 < pttl_at(target, renewed) <= 1500
    assert cluster.cli(source.port, "CLUSTER", "COUNTKEYSINSLOT", str(slot)) == "0"
    # The waiter followed the channel to the target node.
    assert wait_for(lambda: shard_subscribers(target, channel) == 1, 5)
    released = time.monotonic()
    slow.lock(held).release()
    waiter.join(30)
    assert result["acquired"] and result["at"] - released < 10  # the lease had 25 s left
    fast.lock(renewed).release()
    assert pttl_at(target, renewed) == -2
    print(f"\nmigration of slot {slot}: {migrated_in * 1000:.0f} ms (1.6 s of it in ASK); "
          f"waiter woken {(result['at'] - released) * 1000:.0f} ms after the release")


def test_redirects_with_an_empty_host(own_cluster, clients):
    """Redis 7 with cluster-preferred-endpoint-type unknown-endpoint answers "MOVED 3999 :6381"
    and "ASK 3999 :6381": the empty host is the node that answered."""
    cluster = own_cluster
    for node in cluster.nodes:
        assert cluster.cli(node.port, "CONFIG", "SET", "cluster-preferred-endpoint-type",
                           "unknown-endpoint") == "OK"
    slot = cluster.keyslot("ue")
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    client = clients(cluster.url, watchdog_timeout=1.5)
    held, later = "{ue}held", "{ue}later"
    assert client.lock(held).acquire(timeout=0)
    src = raw_at(source.port)
    try:
        with pytest.raises(RespError, match=r"^MOVED \d+ :\d+$"):
            src("GET", "{x}other-slot" if cluster.keyslot("x") != slot else "{y}other-slot")
    finally:
        src.close()
    open_migration(cluster, slot, source, target)
    migrate_keys(cluster, source, target, [held])
    assert client.lock(later).acquire(timeout=0)  # the source answers "ASK <slot> :<port>"
    assert asking_call(target, "EXISTS", later) == 1
    close_migration(cluster, slot, target)
    client.lock(later).release()  # the source answers "MOVED <slot> :<port>"
    client.lock(held).release()
    dst = raw_at(target.port)
    try:
        assert dst("EXISTS", held) == 0 and dst("EXISTS", later) == 0
    finally:
        dst.close()


def test_a_moved_slot_puts_its_holds_in_doubt_at_once(own_cluster, clients):
    """The map change itself, learned from any call (here another lock's MOVED), puts the holds
    in the moved slot in doubt and verifies them on the new node at once, not at the next round:
    with the default 30 s lease that round is up to 10 s away."""
    cluster = own_cluster
    slot = cluster.keyslot("moved")
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    other = next(f"{{o{i}}}kept" for i in range(100)
                 if cluster.node_of_slot(cluster.keyslot(f"o{i}")).port == source.port
                 and cluster.keyslot(f"o{i}") != slot)
    states = []
    holder = clients(cluster.url, on_state=lambda name, state, why: states.append(
        (name, state, time.monotonic())))
    held, kept = holder.lock("{moved}held"), holder.lock(other)
    assert held.acquire(timeout=0) and kept.acquire(timeout=0)
    time.sleep(0.2)
    assert states == []
    migrate_slot(cluster, slot, source, target)
    moved_at = time.monotonic()
    # answered MOVED: the client learns the new map (a query: an acquire in the slot would be
    # refused for the failover grace, test_failover_grace.py)
    assert not holder.lock("{moved}probe").locked()
    assert wait_for(lambda: ("{moved}held", "held") in [(n, s) for n, s, _ in states], 5), states
    mine = [(s, at - moved_at) for n, s, at in states if n == "{moved}held"]
    assert [s for s, _ in mine] == ["in_doubt", "held"], mine
    assert mine[1][1] < 5, mine  # long before the round 10 s away
    assert all(n == "{moved}held" for n, _, _ in states), states  # the other slot's hold: no doubt
    assert held.valid_for() > 20
    held.release()
    kept.release()


def test_a_slot_moved_while_nothing_is_held_doubts_no_later_hold(own_cluster, clients):
    """The client learns of a moved slot while it holds nothing: a lock taken later in that slot
    (at its new node) is not put in doubt for it. A 3 s lease (renewed every second, where the
    default 30 s one waits 10 s) lets the test see rounds pass; the test above runs the default."""
    cluster = own_cluster
    slot = cluster.keyslot("idle")
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    states = []
    holder = clients(cluster.url, watchdog_timeout=3.0,
                     on_state=lambda name, state, why: states.append((name, state, why)))
    warm = holder.lock("{idle}warm")  # the slot map learned, with the slot at its first node
    assert warm.acquire(timeout=0)
    warm.release()
    migrate_slot(cluster, slot, source, target)
    # a query answered MOVED: the client learns the new map while it holds nothing
    assert not holder.lock("{idle}probe").locked()
    time.sleep(1.5)  # past the lingering watchdog's period
    later = holder.lock("{idle}later")
    assert later.acquire(timeout=0)
    time.sleep(2.5)  # two rounds at least
    assert [s for s in states if s[0] == "{idle}later"] == [], states
    assert later.valid_for() > 1
    later.release()
