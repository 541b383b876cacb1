"""redis+sentinel://: the client asks the sentinels for the master, follows failovers (planned
and a killed master), keeps waiters waiting and renewals going, and reports honestly what a
failover lost. One deployment per module: each failover swaps the master and the replica."""

import signal
import threading
import time

import pytest
from deployment import MASTER, Deployment

import redlease
from redlease.testing import RedisServer
from testkit import Raw, wait_for

FAST = {"connect_timeout": 1, "command_timeout": 1}


@pytest.fixture(scope="module")
def shared():
    d = Deployment()
    yield d
    d.close()


def test_locks_waits_and_renewals_through_sentinel(shared, make_client):
    holder = make_client(shared.url, watchdog_timeout=1.5, client_name="via-sentinel", **FAST)
    waiter = make_client(shared.url, **FAST)
    got = []

    def wait():
        lock = waiter.lock("sentinel:job")
        got.append((lock.acquire(timeout=20), time.monotonic()))
        lock.release()

    with holder.lock("sentinel:job"):
        t = threading.Thread(target=wait)
        t.start()
        time.sleep(2.0)  # more than a lease: renewed on the master the sentinels named
        assert shared.on_master("PTTL", "sentinel:job") > 0
        # The holder's connections to the master the sentinels named carry its name.
        [owner] = waiter.lock("sentinel:job").owner()
        assert (owner.client_id, owner.name) == (holder.id, "via-sentinel")
        released = time.monotonic()
    t.join()
    assert got[0][0] is True and got[0][1] - released < 1.0
    # woken by the message: its subscriber thread sent the acquire to the master named
    assert waiter.stats()["woken_acquires"] == 1
    assert shared.on_master("EXISTS", "sentinel:job") == 0


def test_planned_failover_loses_no_hold_with_sync_replicas(shared, make_client):
    client = make_client(shared.url, watchdog_timeout=1.5, sync_replicas=1, sync_timeout=1,
                         **FAST)
    lost, states = [], []
    client2 = make_client(shared.url, watchdog_timeout=1.5, sync_replicas=1, sync_timeout=1,
                          on_lost=lambda name, reason: lost.append(reason),
                          on_state=lambda name, state, why: states.append(
                              (state, why, time.monotonic())), **FAST)
    lock = client2.lock("sentinel:planned")
    lock.acquire()
    assert wait_for(lambda: client2.stats()["renewed_holds"] >= 1, 3)  # it knows its server
    before = shared.master_port()
    started = time.monotonic()
    shared.failover()
    assert shared.master_port() != before
    time.sleep(2 * 1.5)  # two leases on the new master: only renewals there keep it
    assert not lock.lost and lost == []
    # The failover was seen: in doubt (its server changed), verified on the new master, held.
    assert [s for s, _, _ in states][:2] == ["in_doubt", "held"], states
    print("planned failover asked -> in doubt %.3f s (%s) -> held %.3f s" % (
        states[0][2] - started, states[0][1], states[1][2] - started))
    assert client2.stats()["server_changes"] == 1
    assert shared.on_master("PTTL", "sentinel:planned") > 0
    lock.release()
    assert shared.on_master("EXISTS", "sentinel:planned") == 0
    with client.lock("sentinel:planned", timeout=5):  # the other client, on the new master too
        pass


def test_a_hold_the_replica_never_saw_is_lost_to_the_failover(make_client):
    """The other half of failover detection: a hold taken on the master after its replica was cut
    off (the replica cannot reconnect: the master now asks a password it does not have) is not on
    the promoted replica. Not renewed yet, it still knows the server that granted it: in doubt at
    +switch-master, then lost as `failover` by the round on the new master."""
    d = Deployment()
    try:
        lost, states = [], []
        holder = make_client(d.url, watchdog_timeout=3,
                             on_lost=lambda name, reason: lost.append((reason, time.monotonic())),
                             on_state=lambda name, state, why: states.append(
                                 (state, why, time.monotonic())), **FAST)
        lock = holder.lock("sentinel:unsynced")
        assert not lock.locked()  # opens the holder's connection to the master
        d.cut_replica_off()
        assert lock.acquire(timeout=0)
        assert Raw(d.replica_server().url)("EXISTS", "sentinel:unsynced") == 0
        started = time.monotonic()
        d.sentinels[0]("SENTINEL", "FAILOVER", MASTER)
        assert wait_for(lambda: lost, 30), (states, lost)
        assert lost[0][0] == "failover"
        assert lock.lost and lock.lost_reason == "failover"
        assert [s for s, _, _ in states] == ["in_doubt", "lost"], states
        print("unsynced hold: failover asked -> in doubt %.3f s (%s) -> lost %.3f s" % (
            states[0][2] - started, states[0][1], lost[0][1] - started))
    finally:
        d.close()


@pytest.mark.parametrize("grace", [None, 0], ids=["default-grace", "grace-0"])
def test_the_new_master_grants_a_lost_hold_only_after_its_holder_was_told(make_client, grace):
    """A hold the promoted replica never saw (cut off as above) is free on the new master. Another
    client that follows the failover grants nothing for failover_grace (default 1 s): the holder,
    which hears of the same failover, is told (in doubt) before the other client gets the lock.
    With failover_grace=0 the other client gets it as soon as it follows the new master."""
    d = Deployment()
    try:
        states = []
        holder = make_client(d.url, watchdog_timeout=3, on_state=lambda name, state, why:
                             states.append((state, time.monotonic())), **FAST)
        other = make_client(d.url, failover_grace=grace, **FAST)
        lock, contender = holder.lock("sentinel:grace"), other.lock("sentinel:grace")
        assert not lock.locked() and not contender.locked()  # both follow the master
        d.cut_replica_off()
        assert lock.acquire(timeout=0)
        d.sentinels[0]("SENTINEL", "FAILOVER", MASTER)
        followed_at = got_at = None
        deadline = time.monotonic() + 30
        while got_at is None and time.monotonic() < deadline:
            if followed_at is None and other.stats()["master_changes"] == 1:
                followed_at = time.monotonic()
            if contender.acquire(timeout=0):
                got_at = time.monotonic()
            else:
                time.sleep(0.005)
        assert got_at is not None and followed_at is not None, states
        assert other.stats()["master_changes"] == 1
        print("followed the new master -> granted %.3f s later; holder's states %s" % (
            got_at - followed_at, [(s, round(t - followed_at, 3)) for s, t in states]))
        if grace is None:
            assert got_at - followed_at >= 0.8  # the 1 s grace, less the polling's slack
            assert states and states[0][0] == "in_doubt" and states[0][1] < got_at, states
        else:
            assert got_at - followed_at < 0.5
        contender.release()
    finally:
        d.close()


def test_a_failover_is_heard_from_any_sentinel(make_client):
    """The client listens for +switch-master on every sentinel, not on the first alone: with the
    first sentinel paused (its connections open, silent), a failover announced by the others still
    reaches a client that has nothing to renew and makes no call (nothing else would tell it)."""
    d = Deployment()
    try:
        client = make_client(d.url, **FAST)
        assert not client.lock("sentinel:any").locked()  # asks sentinel 0; the watchers start
        assert wait_for(lambda: all(n >= 1 for n in d.subscribers()), 10)
        with d.failover_with_the_first_sentinel_paused() as announced:
            assert wait_for(lambda: client.stats()["master_changes"] == 1, 10)
            print("announced by another sentinel -> followed %.3f s later" % (
                time.monotonic() - announced))
    finally:
        d.close()


def test_failover_while_waiting(shared, make_client):
    # A lease longer than a failover on a loaded machine: if the hold expired meanwhile, the
    # waiter would rightly take the lock before it could be seen subscribed on the new master.
    holder = make_client(shared.url, watchdog_timeout=6, sync_replicas=1, sync_timeout=1,
                         **FAST)
    waiter = make_client(shared.url, **FAST)
    lock = holder.lock("sentinel:wait")
    lock.acquire()
    got = []

    def wait():
        w = waiter.lock("sentinel:wait")
        got.append(w.acquire(timeout=30))
        w.release()

    t = threading.Thread(target=wait)
    t.start()
    assert wait_for(lambda: shared.on_master("PUBSUB", "NUMSUB",
                                      "redisson_lock__channel:{sentinel:wait}")[1] == 1, 5)
    shared.failover()
    # The waiter resubscribes on the new master; the holder's release there wakes it.
    assert wait_for(lambda: shared.on_master("PUBSUB", "NUMSUB",
                                      "redisson_lock__channel:{sentinel:wait}")[1] == 1, 10)
    lock.release()
    t.join(20)
    assert got == [True]


def test_killed_master_is_replaced_and_locks_work_again(make_client):
    d = Deployment()
    try:
        events = []
        holder = make_client(d.url, watchdog_timeout=3, on_lost=lambda n, r: events.append(r),
                             **FAST)
        held = holder.lock("sentinel:killed")
        held.acquire()
        assert wait_for(lambda: Raw(d.replica_server().url)("EXISTS", "sentinel:killed") == 1, 5)
        old = d.master_server()
        killed_at = time.monotonic()
        old.process.send_signal(signal.SIGKILL)
        other = make_client(d.url, client_name="after-kill", **FAST)
        acquired_at = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if other.lock("sentinel:after").acquire(timeout=0):
                    acquired_at = time.monotonic()
                    break
            except redlease.ConnectionError:
                time.sleep(0.1)
        assert acquired_at is not None, "no acquire succeeded after the master was killed"
        print(f"master killed -> first acquire on the new master: {acquired_at - killed_at:.2f} s")
        # Its connection to the promoted master named itself there too.
        [owner] = other.lock("sentinel:after").owner()
        assert (owner.client_id, owner.name) == (other.id, "after-kill")
        # The holder either kept its lock (renewed on the promoted replica) or was told it lost it.
        time.sleep(3)
        assert (not held.lost and d.on_master("HEXISTS", "sentinel:killed",
                                            f"{holder.id}:{redlease._core.current_context()}"))\
            or held.lost
    finally:
        d.close()


def test_no_sentinel_reachable_is_a_clear_error():
    ports = [RedisServer().start() for _ in range(2)]
    url = "redis+sentinel://" + ",".join(f"127.0.0.1:{s.port}" for s in ports) + "/mymaster"
    for s in ports:
        s.close()  # nothing listens there now
    client = redlease.Client(url, **FAST)
    try:
        with pytest.raises(redlease.ConnectionError, match="no sentinel could be asked"):
            client.lock("x").acquire(timeout=0)
    finally:
        client.close()


def test_unknown_master_name_is_a_clear_error(shared):
    url = shared.url.replace("/mymaster/", "/no-such-master/")
    client = redlease.Client(url, **FAST)
    try:
        with pytest.raises(redlease.ConnectionError, match='know no master named "no-such-master"'):
            client.lock("x").acquire(timeout=0)
    finally:
        client.close()


@pytest.mark.parametrize("url,words", [
    ("redis+sentinel://127.0.0.1:26379", "names the master"),
    ("redis+sentinel://127.0.0.1:26379/", "names the master"),
    ("redis+sentinel:///mymaster", "empty host"),
    ("redis+sentinel://127.0.0.1:26379,/mymaster", "empty host"),
    ("redis+sentinel://127.0.0.1:99999/mymaster", "port"),
    ("redis+sentinel://127.0.0.1:26379/mymaster/notadb", "database"),
    ("redis+sentinel://127.0.0.1:26379/mymaster/0/extra", "database"),
])
def test_bad_sentinel_urls(url, words):
    with pytest.raises(ValueError, match=words):
        redlease.Client(url)
