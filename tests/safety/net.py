"""Addresses, client labels and the partition nemesis.

Every server gets an address of its own in 127.0.0.0/8 (Linux routes all of it to lo), unique
to the run; every
client process a group id of its own, which marks its connections. A partition drops packets
in an nftables table of the run's own, named after the run's
pid (redlease_safety_<pid>) so that runs never collide and a dead run's table can be found and
deleted (sweep). Packets are dropped at the input hook, where they arrive, not where they leave:
a drop at output fails the sender's send or connect at once (EPERM), which no real partition
does; a drop at input leaves connections open, nothing gets through and new connects hang.
"""

import os
import re
import subprocess
from typing import Iterable, List, Tuple

from procs import alive

PREFIX = "redlease_safety_"


def node_address(i: int, pid: int = 0) -> str:
    """Server i of the run (Redis, PostgreSQL, sentinels; i < 8): an address of the run's own in
    127.0.0.0/8, drawn from its pid, so that a partition of one run's server never cuts
    another run's (two runs collide with odds of about one in two million)."""
    assert 0 <= i < 8
    k = ((pid or os.getpid()) * 2654435761) % (255 * 256 * 31)
    return f"127.{1 + k // (256 * 31)}.{(k // 31) % 256}.{(k % 31) * 8 + i + 1}"


def client_gid(k: int) -> int:
    """Client process k runs with this group id (and root's user id): the label by which its
    connections are marked and cut (see README.md). Unique to the run (its pid) so that two runs
    never cut each other's clients; no group of that id needs to exist."""
    return (1 << 31) + os.getpid() * 64 + k


def nft(script: str) -> None:
    done = subprocess.run(["nft", "-f", "-"], input=script, text=True, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"nft failed: {done.stderr.strip()}\n{script}")


def tables() -> List[str]:
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(rf"^table ip ({PREFIX}\d+)$", out, re.M)


class Partitions:
    """The run's table. Dropped: packets from or to an address of `cut`; between the two
    addresses of a pair of `pairs` (either direction); of a connection made by a client process
    (marked by its group id, see client_gid) to or from an address it is cut from (`procpairs`).
    cut()/heal() change the sets atomically."""

    def __init__(self) -> None:
        self.table = f"{PREFIX}{os.getpid()}"
        nft(f"""
table ip {self.table} {{
  set cut {{ type ipv4_addr; }}
  set pairs {{ type ipv4_addr . ipv4_addr; }}
  map marks {{ type gid : mark; }}
  set procpairs {{ type mark . ipv4_addr; }}
  chain output {{
    type filter hook output priority -10; policy accept;
    ct state new ct mark set meta skgid map @marks
  }}
  chain input {{
    type filter hook input priority -10; policy accept;
    ip saddr @cut drop
    ip daddr @cut drop
    ip saddr . ip daddr @pairs drop
    ct mark . ip daddr @procpairs drop
    ct mark . ip saddr @procpairs drop
  }}
}}""")
        self.closed = False

    def label(self, gid: int) -> None:
        """Connections that processes of this group id open from now on are marked with it
        (the output chain, at the connection's first packet)."""
        nft(f"add element ip {self.table} marks {{ {gid} : {gid} }}\n")

    def cut(self, addresses: Iterable[str] = (), pairs: Iterable[Tuple[str, str]] = (),
            processes: Iterable[Tuple[int, str]] = ()) -> None:
        """Cuts addresses, pairs of addresses, and (group id, address) pairs: every connection of
        those processes to or from that address."""
        addresses = list(addresses)
        both = [f"{a} . {b}" for a, b in pairs] + [f"{b} . {a}" for a, b in pairs]
        marked = [f"{gid} . {a}" for gid, a in processes]
        script = ""
        if addresses:
            script += f"add element ip {self.table} cut {{ {', '.join(addresses)} }}\n"
        if both:
            script += f"add element ip {self.table} pairs {{ {', '.join(both)} }}\n"
        if marked:
            script += f"add element ip {self.table} procpairs {{ {', '.join(marked)} }}\n"
        if script:
            nft(script)

    def heal(self) -> None:
        nft(f"flush set ip {self.table} cut\nflush set ip {self.table} pairs\n"
            f"flush set ip {self.table} procpairs\n")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            nft(f"delete table ip {self.table}\n")


def sweep() -> List[str]:
    """Deletes the tables of runs that are no longer alive; answers their names."""
    removed = []
    for t in tables():
        if not alive(int(t[len(PREFIX):])):
            nft(f"delete table ip {t}\n")
            removed.append(t)
    return removed
