"""A slot whose keys are split between two nodes by a migration in progress (as `redis-cli
--cluster reshard` leaves it between two MIGRATE batches): the source answers a call of several
keys TRYAGAIN or ASK, the target TRYAGAIN, though each key alone is served. No hold may be lost:
the watchdog renews such a slot's holds one key at a time."""

import subprocess
import threading
import time

from clusterkit import (
    asking_call,
    close_migration,
    migrate_keys,
    node_id,
    open_migration,
    raw_at,
    tag_in_slot,
)

from testkit import LostRecorder, RespError, wait_for


def pttl_on_either_side(source, target, key):
    """PTTL of a key of a slot in migration: at the source, or at the target when it moved (-2:
    on neither side)."""
    src = raw_at(source.port)
    try:
        return src("PTTL", key)
    except RespError as e:  # ASK: not at the source (moved, or gone)
        assert str(e).startswith("ASK "), e
        return asking_call(target, "PTTL", key)
    finally:
        src.close()


def test_holds_survive_a_slot_left_split_longer_than_a_lease(own_cluster, clients):
    cluster = own_cluster
    names = [f"{{split}}k{i}" for i in range(6)]  # one slot: the tag
    slot = cluster.keyslot("split")
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    lost = LostRecorder()
    client = clients(cluster.url, watchdog_timeout=1.5, on_lost=lost)  # renews every 0.5 s
    for name in names:
        assert client.lock(name).acquire(timeout=0)
    open_migration(cluster, slot, source, target)
    moved, stayed = names[:3], names[3:]
    migrate_keys(cluster, source, target, moved)
    rounds = client.stats()["renew_rounds"]
    time.sleep(4.0)  # more than two leases, split
    for name in names:
        assert 0 < pttl_on_either_side(source, target, name) <= 1500, name
    assert not lost.calls, lost.calls
    assert client.stats()["renew_rounds"] - rounds >= 5
    # A release while the slot is in migration: Redis answers TRYAGAIN (its keys include the
    # channel's, which never exists) until the migration ends; it is retried until then, within
    # the command timeout. A hold being released is no longer renewed, so the migration ends
    # well within what is left of the 1.5 s lease (a longer wait reports the hold expired).
    def finish():
        migrate_keys(cluster, source, target, stayed)
        close_migration(cluster, slot, target)

    finishing = threading.Timer(0.3, finish)
    finishing.start()
    started = time.monotonic()
    client.lock(stayed[0]).release()
    client.lock(moved[0]).release()
    assert 0.2 < time.monotonic() - started < 4.5
    finishing.join()
    time.sleep(1.0)
    assert not lost.calls, lost.calls
    for name in names[1:3] + names[4:]:
        client.lock(name).release()
    for name in names:
        assert asking_call(target, "EXISTS", name) == 0


def test_holds_survive_a_reshard_by_redis_cli(own_cluster, clients):
    """`redis-cli --cluster reshard` moves a slot of 50 holds among 10,000 other keys, one key per
    MIGRATE: the holds' keys are split for seconds, longer than their lease."""
    cluster = own_cluster
    slot = 0  # redis-cli takes a source's lowest slots first
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    tag = tag_in_slot(slot)
    names = [f"{{{tag}}}lock{i}" for i in range(50)]
    lost = LostRecorder()
    client = clients(cluster.url, watchdog_timeout=1.0, on_lost=lost)  # renews every 0.33 s
    src = raw_at(source.port)
    try:
        for i, name in enumerate(names):  # the holds spread among the keys the reshard moves
            assert client.lock(name).acquire(timeout=0)
            assert src("DEBUG", "POPULATE", "200", f"{{{tag}}}filler{i}", "64") == "OK"
        assert src("CLUSTER", "COUNTKEYSINSLOT", slot) == 50 * 201
    finally:
        src.close()
    started = time.monotonic()
    done = subprocess.run(
        ["redis-cli", "--cluster", "reshard", f"127.0.0.1:{source.port}",
         "--cluster-from", node_id(cluster, source), "--cluster-to", node_id(cluster, target),
         "--cluster-slots", "1", "--cluster-yes", "--cluster-pipeline", "1"],
        capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert wait_for(lambda: cluster.node_of_slot(slot).port == target.port, 10)
    time.sleep(1.0)
    assert not lost.calls, lost.calls[:3]
    dst = raw_at(target.port)
    try:
        assert dst("CLUSTER", "COUNTKEYSINSLOT", slot) == 50 * 201
        for name in names:
            assert 0 < dst("PTTL", name) <= 1000, name
    finally:
        dst.close()
    for name in names:
        client.lock(name).release()
    print(f"\nreshard of slot {slot} ({50 * 201} keys, one per MIGRATE): {took:.1f} s")
