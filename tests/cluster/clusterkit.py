"""Helpers of the Cluster suite: names spread over the masters, a raw client to one node."""

import itertools

from testkit import Raw


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
