"""A client cut off from every node of a cluster, as the safety harness's partition-one case
does: its calls end within their time limits, and its holds go in doubt before their lease
ends, then are reported lost. Two ways to cut: nftables dropping every packet to the nodes'
addresses (connects hang, as in a partition: needs root) and SIGSTOP of every node (connects
complete in the kernel's backlog, nothing is answered)."""

import os
import signal
import sys
import time

import pytest
from clusterkit import names_on_every_master

import redlease
from redlease.testing import RedisCluster
from testkit import wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "safety"))
import net  # noqa: E402
import procs  # noqa: E402
import servers  # noqa: E402

CONNECT, COMMAND, LEASE = 0.5, 0.5, 2.0
# One Redis gives a call connect_timeout + command_timeout; a cluster's call may ask the map
# once more within the same again. A wide margin for a loaded machine.
CALL_BOUND = 2 * (CONNECT + COMMAND) + 0.7


class States:
    """on_state(name, state, why) with the time each arrived."""

    def __init__(self):
        self.calls = []

    def __call__(self, name, state, why):
        self.calls.append((state, time.monotonic(), why))

    def states(self):
        return [c[0] for c in self.calls]

    def at(self, state):
        return next(c[1] for c in self.calls if c[0] == state)


class Dropped:
    """Every node at an address of its own; cut() drops every packet to or from them (nftables,
    in a table named after this process: net.sweep() deletes one a killed run left)."""

    def __init__(self):
        if os.geteuid() != 0:
            pytest.skip("nftables needs root")
        net.sweep()
        procs.sweep()
        self.run, self.parts = procs.Run(), None
        try:
            self.parts = net.Partitions()
            addresses = [net.node_address(i) for i in range(6)]
            # 10 s before a node is called failed: no failover while cut, as in the safety case.
            self.cluster = servers.Cluster(self.run, addresses, node_timeout_ms=10000)
        except BaseException:
            self.close()
            raise

    def cut(self):
        self.parts.cut(addresses=self.cluster.addresses)

    def heal(self):
        self.parts.heal()

    def close(self):
        if self.parts:
            self.parts.close()
        self.run.close()


class Stopped:
    """Every node stopped with SIGSTOP."""

    def __init__(self):
        self.cluster = RedisCluster(node_timeout_ms=10000).start()

    def cut(self):
        for n in self.cluster.nodes:
            os.kill(n.process.pid, signal.SIGSTOP)

    def heal(self):
        for n in self.cluster.nodes:
            os.kill(n.process.pid, signal.SIGCONT)

    def close(self):
        self.cluster.close()


@pytest.fixture(params=["dropped", "stopped"])
def cutter(request):
    made = Dropped() if request.param == "dropped" else Stopped()
    try:
        yield made
    finally:
        made.close()


def test_cut_off_from_every_node_calls_end_in_time_and_holds_go_in_doubt(cutter, clients):
    cluster = cutter.cluster
    states = States()
    client = clients(cluster.url, watchdog_timeout=LEASE, connect_timeout=CONNECT,
                     command_timeout=COMMAND, on_state=states)
    names = names_on_every_master(cluster, "cut", 2)
    held = client.lock(names[0])
    assert held.acquire(timeout=0)
    for name in names[1:]:  # a connection open to every master
        assert not client.lock(name).locked()
    assert wait_for(lambda: client.stats()["renewed_holds"] >= 1, 5)
    cutter.cut()
    cut = time.monotonic()
    deadline = held.deadline
    took = []
    try:
        # Calls keep coming while cut off, one after another (a worker's loop), until the hold
        # is reported lost.
        for name in names[1:] * 4:
            if "lost" in states.states() or time.monotonic() - cut > 6:
                break
            started = time.monotonic()
            with pytest.raises((redlease.ConnectionError, redlease.ServerError)):
                client.lock(name).acquire(timeout=0)
            took.append(round(time.monotonic() - started, 2))
        assert wait_for(lambda: "lost" in states.states(), 6)
    finally:
        cutter.heal()
    print(f"\n    calls took {took} s; states {states.states()} at "
          f"{[round(c[1] - cut, 2) for c in states.calls]} s after the cut, deadline at "
          f"+{deadline - cut:.2f} s")
    assert max(took) < CALL_BOUND, took
    assert states.states()[:2] == ["in_doubt", "lost"], states.calls
    assert states.at("in_doubt") < deadline <= states.at("lost") + 0.05
    assert states.at("lost") < deadline + 1.0
    with pytest.raises(redlease.LockLostError):
        held.release()
