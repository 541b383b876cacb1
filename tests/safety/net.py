"""Addresses and the partition nemesis.

Every node and every client gets an address of its own in 127.0.0.0/8 (Linux routes all of it
to lo). A partition drops packets in an nftables table of the run's own, named after the run's
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


def node_address(i: int) -> str:
    """Servers (Redis, PostgreSQL): 127.0.1.1, 127.0.1.2, ..."""
    return f"127.0.1.{i + 1}"


def client_address(k: int) -> str:
    """Client k's own address of the Redis node (127.0.2.k+1): see README.md."""
    return f"127.0.2.{k + 1}"


def nft(script: str) -> None:
    done = subprocess.run(["nft", "-f", "-"], input=script, text=True, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"nft failed: {done.stderr.strip()}\n{script}")


def tables() -> List[str]:
    out = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(rf"^table ip ({PREFIX}\d+)$", out, re.M)


class Partitions:
    """The run's table: packets from or to an address of `cut`, or between a pair of `pairs`
    (either direction), are dropped. cut()/heal() change the sets atomically."""

    def __init__(self) -> None:
        self.table = f"{PREFIX}{os.getpid()}"
        nft(f"""
table ip {self.table} {{
  set cut {{ type ipv4_addr; }}
  set pairs {{ type ipv4_addr . ipv4_addr; }}
  chain input {{
    type filter hook input priority -10; policy accept;
    ip saddr @cut drop
    ip daddr @cut drop
    ip saddr . ip daddr @pairs drop
  }}
}}""")
        self.closed = False

    def cut(self, addresses: Iterable[str] = (), pairs: Iterable[Tuple[str, str]] = ()) -> None:
        addresses = list(addresses)
        both = [f"{a} . {b}" for a, b in pairs] + [f"{b} . {a}" for a, b in pairs]
        script = ""
        if addresses:
            script += f"add element ip {self.table} cut {{ {', '.join(addresses)} }}\n"
        if both:
            script += f"add element ip {self.table} pairs {{ {', '.join(both)} }}\n"
        if script:
            nft(script)

    def heal(self) -> None:
        nft(f"flush set ip {self.table} cut\nflush set ip {self.table} pairs\n")

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
