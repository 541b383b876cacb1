"""The failover grace on a Cluster: a slot that changed owner without its keys (what a replica
promoted without the latest writes is) grants no new hold, at a client that learned the move, for
failover_grace (default 1 s); the holder on the old owner, which hears of the same move at its
next call, is told (in doubt) before the other client is granted its lock at the new owner.
A grant whose own call learned the move (its MOVED) is given back. failover_grace=0 turns it off:
then the other client is granted the lock at once, before its holder was told."""

import time

import pytest
from clusterkit import move_without_the_hold, names_on_every_master, raw_at, slot_and_masters


@pytest.mark.parametrize("grace", [None, 0], ids=["default_grace", "grace_off"])
def test_a_moved_slot_grants_a_lost_hold_only_after_its_holder_was_told(own_cluster, clients,
                                                                        grace):
    cluster = own_cluster
    slot, source, target = slot_and_masters(cluster, "fg")
    states = []
    holder = clients(cluster.url, on_state=lambda name, state, why: states.append(
        (name, state, time.monotonic())))
    options = {} if grace is None else {"failover_grace": grace}
    other = clients(cluster.url, **options)
    held, contender = holder.lock("{fg}held"), other.lock("{fg}held")
    assert held.acquire(timeout=0)
    assert contender.locked()  # the other client learns the slot at its first owner
    move_without_the_hold(cluster, slot, source, target, "{fg}held")
    tried_at = time.monotonic()
    granted = contender.acquire(timeout=0)  # answered MOVED: this very call learns the move
    if grace == 0:
        assert granted  # at once: its holder has not been told
        assert states == []
        contender.release()
        return
    assert not granted  # granted at the new owner and given back: the grace holds for it too
    assert other.stats()["master_changes"] == 1
    assert not raw_at(target.port)("EXISTS", "{fg}held")
    time.sleep(0.2)
    assert not holder.lock("{fg}probe").locked()  # the holder's next call learns the move too
    assert contender.acquire(timeout=10)
    got_at = time.monotonic()
    told = [at for name, state, at in states if name == "{fg}held" and state == "in_doubt"]
    print("learned the move -> granted %.3f s later; holder told %s" % (
        got_at - tried_at, [round(at - tried_at, 3) for at in told]))
    assert got_at - tried_at >= 0.9, got_at - tried_at  # the 1 s grace
    assert told and told[0] < got_at, states
    contender.release()


def test_an_idle_holder_hears_of_a_moved_slot_within_the_grace(own_cluster, clients):
    """The holder's client makes no call after its acquire, and its next renewal is 10 s away
    (the default 30 s lease): its watchdog asks a node for the map every half grace while it
    holds, so it is told (in doubt) before the other client's grace ends."""
    cluster = own_cluster
    slot, source, target = slot_and_masters(cluster, "fi")
    states = []
    holder = clients(cluster.url, on_state=lambda name, state, why: states.append(
        (name, state, time.monotonic())))
    other = clients(cluster.url)
    assert other.lock("{fi}held").acquire(timeout=0)  # the other client knows the slot at source
    other.lock("{fi}held").release()
    held = holder.lock("{fi}held")
    assert held.acquire(timeout=0)
    move_without_the_hold(cluster, slot, source, target, "{fi}held")
    tried_at = time.monotonic()
    assert other.lock("{fi}held").acquire(timeout=10)
    got_at = time.monotonic()
    told = [at for name, state, at in states if name == "{fi}held" and state == "in_doubt"]
    print("learned the move -> granted %.3f s later; idle holder told %s" % (
        got_at - tried_at, [round(at - tried_at, 3) for at in told]))
    assert told and told[0] < got_at, states
    other.lock("{fi}held").release()


def test_the_map_is_asked_while_holding_and_not_otherwise(cluster, clients):
    """The cost of the above: one CLUSTER SLOTS every half grace (0.5 s by default) while the
    client holds a lock, none while it holds nothing."""
    client = clients(cluster.url)
    lock = client.lock("{fa}asked")
    assert not lock.locked()  # the map, once
    before = client.stats()["cluster_refreshes"]
    time.sleep(1.6)
    assert client.stats()["cluster_refreshes"] == before
    assert lock.acquire(timeout=0)
    time.sleep(1.6)
    asked = client.stats()["cluster_refreshes"] - before
    lock.release()
    assert 2 <= asked <= 4, asked


def test_a_map_check_at_a_paused_node_delays_no_renewal_round(own_cluster, clients):
    """The map check asks the masters in turn, a paused one too, and waits there until its time
    is up: it must end before the next round is due, so that no round waits for it (a round kept
    waiting past the lease's end is a hold lost unreported). A 900 ms lease (a round every 300 ms)
    and a 3 s grace (a check every 1.5 s) make a check stuck at a paused node as long as five
    rounds; the defaults take the same path (test_an_idle_holder_hears_of_a_moved_slot_...)."""
    cluster = own_cluster
    name = names_on_every_master(cluster, "fp", 1)[0]
    home = cluster.node_of_slot(cluster.keyslot(name))
    states = []
    holder = clients(cluster.url, watchdog_timeout=0.9, failover_grace=3,
                     on_state=lambda n, state, why: states.append((state, why)))
    assert holder.lock(name).acquire(timeout=0)
    before = holder.stats()["cluster_refreshes"]
    paused = [raw_at(m.port) for m in cluster.masters() if m.port != home.port]
    for raw in paused:  # (CLIENT PAUSE leaves the cluster bus alone: no failover)
        assert raw("CLIENT", "PAUSE", "7000", "ALL") == "OK"
    try:
        rounds, last, longest = holder.stats()["renew_rounds"], time.monotonic(), 0.0
        end = last + 6
        while time.monotonic() < end:
            now_rounds = holder.stats()["renew_rounds"]
            if now_rounds != rounds:
                rounds, longest, last = now_rounds, max(longest, time.monotonic() - last), \
                    time.monotonic()
            time.sleep(0.01)
        longest = max(longest, time.monotonic() - last)  # (rounds that stopped count too)
        checks = holder.stats()["cluster_refreshes"] - before
    finally:
        for raw in paused:
            raw("CLIENT", "UNPAUSE")
            raw.close()
    print("longest time between rounds %.3f s; %d map checks; states %s" % (
        longest, checks, states))
    assert states == []  # never in doubt (a check that kept a round waiting: lost, unreachable)
    assert longest < 0.9, longest  # a round every 0.3 s; a check kept one waiting: 1.5 s
    assert checks >= 1  # checks ran while paused (those the unpaused node answered count)
    assert holder.lock(name).locked()
    holder.lock(name).release()
