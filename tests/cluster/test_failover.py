"""A master killed (SIGKILL): its replica is promoted; each hold of that master is either kept
(its key had reached the replica: renewed at the new master) or reported lost (it had not), holds
on the other masters go on untouched, and waiters acquire afterwards."""

import threading
import time

from clusterkit import move_without_the_hold, names_on_every_master, raw_at, slot_and_masters

from testkit import LostRecorder, wait_for


def test_master_killed_replica_takes_over(own_cluster, clients):
    cluster = own_cluster
    names = names_on_every_master(cluster, "fo", 1)
    victim_name = names[0]
    slot = cluster.keyslot(victim_name)
    victim = cluster.node_of_slot(slot)
    replica = next(n for n in cluster.nodes if n not in cluster.masters()
                   and f":{victim.port}" in cluster.cli(n.port, "INFO", "replication")
                   .replace("master_port:", ":"))
    unsynced = next(n for n in names_on_every_master(cluster, "fo-unsynced", 1)
                    if cluster.node_of_slot(cluster.keyslot(n)).port == victim.port)
    kept_lost, unsynced_lost = LostRecorder(), LostRecorder()
    # sync_replicas: every write this client makes has reached the replica (WAIT).
    keeper = clients(cluster.url, watchdog_timeout=10, sync_replicas=1, on_lost=kept_lost)
    loser = clients(cluster.url, watchdog_timeout=10, on_lost=unsynced_lost)
    # Its calls retry at the new master for as long as their command timeout: longer than a
    # failover here (about twice the 1 s node timeout).
    waiting = clients(cluster.url, connect_timeout=1, command_timeout=15)
    for name in names:
        assert keeper.lock(name).acquire(timeout=0)
    # One renewal round (a third of the lease): each hold then knows the server that renewed it.
    assert wait_for(lambda: keeper.stats()["renewed_holds"] >= len(names), 10)
    acquired = {}

    def wait(name):
        acquired[name] = waiting.lock(name).acquire(timeout=60)
        acquired[name + ":at"] = time.monotonic()

    # A waiter on a synced name waits across the failover.
    across = threading.Thread(target=wait, args=(victim_name,))
    across.start()
    assert wait_for(lambda: waiting.stats()["subscriptions"] == 1, 5)  # waiting, at the victim
    # Past its try after subscribing: an acquire on the wire when its master dies fails (it may
    # have run), which is not what this test is about.
    time.sleep(0.3)
    # The replication link cut and the replica kept from reconnecting (the master now asks a
    # password it does not have; connections already open stay in): the replica never sees the
    # next write, made on the loser's open connection.
    assert not loser.lock(unsynced).locked()  # opens the loser's connection to the victim
    raw = raw_at(victim.port)
    assert raw("CONFIG", "SET", "requirepass", "not-the-replicas") == "OK"
    assert raw("CLIENT", "KILL", "TYPE", "replica") == 1
    raw.close()
    assert loser.lock(unsynced).acquire(timeout=0)
    killed = time.monotonic()
    victim.stop()
    after = threading.Thread(target=wait, args=(unsynced,))
    after.start()
    waiters = [across, after]
    assert wait_for(lambda: replica in cluster.masters(), 30)
    promoted = time.monotonic()
    # The unsynced hold's key is not at the new master: a waiter takes the lock, and its old
    # holder is told it lost it.
    assert wait_for(lambda: acquired.get(unsynced), 30)
    assert unsynced_lost.wait(10)
    assert unsynced_lost.calls[0][0] in (unsynced, unsynced.encode())
    # Never renewed, it still knows the server that granted it: lost to the failover.
    assert unsynced_lost.calls[0][1] == "failover"
    assert loser.lock(unsynced).lost
    # The synced hold is kept: renewed at the new master for several rounds, never lost; the
    # round that first reached the promoted replica saw another server, and verified the hold.
    time.sleep(3)
    assert not kept_lost.calls
    assert wait_for(lambda: keeper.stats()["server_changes"] == 1, 10), keeper.stats()
    for name in names:
        assert keeper.lock(name).held() and not keeper.lock(name).lost
    assert victim_name not in acquired
    released = time.monotonic()
    keeper.lock(victim_name).release()
    for t in waiters:
        t.join(30)
    assert acquired[victim_name] and acquired[victim_name + ":at"] - released < 10
    for name in names[1:]:
        keeper.lock(name).release()
    print(f"\nfailover: replica promoted {(promoted - killed) * 1000:.0f} ms after the kill; "
          f"waiter on the unsynced name acquired {(acquired[unsynced + ':at'] - killed) * 1000:.0f}"
          f" ms after it; loss reported {(unsynced_lost.calls[0][2] - killed) * 1000:.0f} ms after")


def test_a_hold_lost_at_a_new_owner_without_the_scripts_is_reported_as_a_failover(own_cluster,
                                                                                    clients):
    """A promoted replica has none of the scripts (the script cache is not replicated): the
    round's call there answers NOSCRIPT and is sent again through the pool. The hold must still see
    that another server answered it: lost to a failover, not "deleted" as if someone had deleted
    its key at the server that granted it."""
    cluster = own_cluster
    slot, source, target = slot_and_masters(cluster, "fn")
    lost = LostRecorder()
    holder = clients(cluster.url, on_lost=lost)
    assert holder.lock("{fn}held").acquire(timeout=0)
    move_without_the_hold(cluster, slot, source, target, "{fn}held")
    raw = raw_at(target.port)
    assert raw("SCRIPT", "FLUSH") == "OK"
    raw.close()
    # The holder's map check (every half grace) sees the move and runs a round at once.
    assert lost.wait(10)
    assert lost.calls[0][0] in ("{fn}held", b"{fn}held")
    assert lost.calls[0][1] == "failover", lost.calls
