"""Helpers of the Cluster suite: names spread over the masters, a raw client to one node, a
cluster over TLS."""

import binascii
import itertools
import os
import subprocess
import sys

from redlease.testing import RedisCluster, RedisServer
from testkit import Raw

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "sentinel"))
from deployment import free_port, tls_args  # noqa: E402


def names_on_every_master(cluster, prefix, per_master):
    """`per_master` names for each master (by the slot the cluster computes), in master order."""
    masters = sorted(m.port for m in cluster.masters())
    found = {port: [] for port in masters}
    for i in itertools.count():
        name = f"{prefix}:{i}"
        port = cluster.node_of_slot(cluster.keyslot(name)).port
        if len(found[port]) < per_master:
            found[port].append(name)
        if all(len(v) == per_master for v in found.values()):
            return [n for port in masters for n in found[port]]


def raw_at(port):
    return Raw(f"redis://127.0.0.1:{port}")


def node_call(cluster, key, *args):
    """One command at the master serving `key`."""
    r = raw_at(cluster.node_of_slot(cluster.keyslot(key)).port)
    try:
        return r(*args)
    finally:
        r.close()


def host_of(node):
    """The node's address (the safety harness gives each node one of its own)."""
    return getattr(node, "address", "127.0.0.1")


def node_id(cluster, node):
    return cluster.cli(node.port, "CLUSTER", "MYID")


def migrate_slot(cluster, slot, source, target, between=None):
    """Moves `slot` from `source` to `target` as redis-cli --cluster reshard does: IMPORTING and
    MIGRATING, MIGRATE of its keys, then SETSLOT NODE at every master. `between` runs after the
    keys moved and before the slot is handed over (meanwhile `source` answers ASK)."""
    source_id, target_id = node_id(cluster, source), node_id(cluster, target)
    assert cluster.cli(target.port, "CLUSTER", "SETSLOT", str(slot), "IMPORTING",
                       source_id) == "OK"
    assert cluster.cli(source.port, "CLUSTER", "SETSLOT", str(slot), "MIGRATING",
                       target_id) == "OK"
    keys = cluster.cli(source.port, "CLUSTER", "GETKEYSINSLOT", str(slot), "1000").split()
    if keys:
        migrate_keys(cluster, source, target, keys)
    if between:
        between()
    for node in [target, source] + [m for m in cluster.masters() if m not in (source, target)]:
        assert cluster.cli(node.port, "CLUSTER", "SETSLOT", str(slot), "NODE", target_id) == "OK"


def tag_in_slot(slot, prefix="t"):
    """A hash tag whose keys fall in `slot` (Redis Cluster's CRC16/XMODEM, computed here)."""
    for i in itertools.count():
        tag = f"{prefix}{i}"
        if binascii.crc_hqx(tag.encode(), 0) % 16384 == slot:
            return tag


def asking_call(node, *args):
    """One command at `node` after ASKING (an importing node answers for its slot only then)."""
    r = raw_at(node.port)
    try:
        r("ASKING")
        return r(*args)
    finally:
        r.close()


def open_migration(cluster, slot, source, target):
    """IMPORTING at `target`, MIGRATING at `source`: the first step of a reshard of `slot`."""
    assert cluster.cli(target.port, "CLUSTER", "SETSLOT", str(slot), "IMPORTING",
                       node_id(cluster, source)) == "OK"
    assert cluster.cli(source.port, "CLUSTER", "SETSLOT", str(slot), "MIGRATING",
                       node_id(cluster, target)) == "OK"


def migrate_keys(cluster, source, target, keys):
    """MIGRATE of `keys` (of a slot in migration) from `source` to `target` (NOKEY: every one
    was deleted meanwhile, as a lock released during a reshard is)."""
    assert cluster.cli(source.port, "MIGRATE", host_of(target), str(target.port), "", "0",
                       "5000", "KEYS", *keys) in ("OK", "NOKEY")


def close_migration(cluster, slot, target):
    """SETSLOT NODE at every master: `slot` is `target`'s."""
    target_id = node_id(cluster, target)
    others = [m for m in cluster.masters() if m.port != target.port]
    for node in [target] + others:
        assert cluster.cli(node.port, "CLUSTER", "SETSLOT", str(slot), "NODE", target_id) == "OK"


def slot_and_masters(cluster, name):
    """The slot of `name` (or of its hash tag), the master serving it, and another master: where
    a test moves it."""
    slot = cluster.keyslot(name)
    source = cluster.node_of_slot(slot)
    return slot, source, next(m for m in cluster.masters() if m.port != source.port)


def move_without_the_hold(cluster, slot, source, target, key):
    """The slot goes to `target` and the hold at `source` is gone, as after a failover to a
    replica that never got it: no MIGRATE, the key deleted at `source` (which refuses to hand over
    a slot it still has keys in)."""
    open_migration(cluster, slot, source, target)
    r = raw_at(source.port)
    try:
        assert r("DEL", key) == 1
    finally:
        r.close()
    close_migration(cluster, slot, target)


class TlsCluster(RedisCluster):
    """A RedisCluster whose nodes also speak TLS (certificates of tests/tls/make-certs, a
    deployment.TlsCerts): each node a ``tls_port`` besides its plain one, the cluster bus and
    replication over TLS. Plain connections (the kit's helpers) see the plain ports; TLS ones see
    the TLS ports in CLUSTER SLOTS and redirects. ``url`` is rediss+cluster:// to the masters."""

    def __init__(self, tls, **kwargs):
        super().__init__(**kwargs)
        self.tls = tls

    @property
    def url(self):
        seeds = ",".join(f"127.0.0.1:{n.tls_port}" for n in self.nodes[:self.masters_wanted])
        return f"rediss+cluster://{seeds}"

    def _node(self):
        for _ in range(3):  # (a TLS port taken meanwhile: another one)
            port = free_port()
            while port >= 55000:  # the bus listens on tls_port + 10000
                port = free_port()
            node = RedisServer(extra_args=self.node_args() + tls_args(self.tls, port)
                               + ["--tls-cluster", "yes"])
            node.tls_port = port
            try:
                return node.start()
            except RuntimeError:
                pass
        raise RuntimeError("a cluster node did not start with a TLS port")

    def start(self):
        try:
            for _ in range(self.masters_wanted * (1 + self.replicas_wanted)):
                self.nodes.append(self._node())
            c = self.tls.dir
            subprocess.run(["redis-cli", "--tls", "--cacert", f"{c}/ca.crt", "--cert",
                            f"{c}/client.crt", "--key", f"{c}/client.key", "--cluster", "create",
                            *[f"127.0.0.1:{n.tls_port}" for n in self.nodes],
                            "--cluster-replicas", str(self.replicas_wanted), "--cluster-yes"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=self.start_timeout)
            self.wait_ok(self.start_timeout)
        except BaseException:
            self.close()
            raise
        return self
