"""The cases of the short form (make test-safety) and of the full run (make safety).

Topology "one-redis": one redis-server; "sentinel": a master, a replica and three sentinels;
"cluster": three masters with a replica each (servers.py). Each client process runs one owner
(a thread in Python, a coroutine in Lua) per entry of OWNERS (CLUSTER_OWNERS: names spread over
the three masters); every process has the same owners, so each lock is contended by every
process, Python's, Lua's and (one Redis) nginx's alike (Case.langs).
"""

import binascii
import itertools
from dataclasses import dataclass, field, replace
from typing import Dict, List, Tuple

from nemesis import CLUSTER_KINDS, FAILOVER_KINDS, KINDS

OWNERS: List[Tuple[str, str]] = [
    ("mutex", "mutex:0"), ("mutex", "mutex:0"),
    ("fenced", "fenced:0"), ("unfenced", "unfenced:0"),
]


@dataclass(frozen=True)
class Case:
    name: str
    nemesis: Tuple[str, ...]          # kinds to draw from (empty: no fault)
    duration: float                   # seconds of workload
    lease: float                      # watchdog_timeout
    procs: int = 4
    # the language of each client process, in turn: process k runs langs[k % len(langs)]
    # (python: worker.py; lua: worker.lua, the rock under lua5.4; openresty: an nginx of its
    # own, resty.py, one Redis only: the OpenResty backend has no Sentinel or Cluster URLs)
    langs: Tuple[str, ...] = ("python", "lua")
    owners: Tuple[Tuple[str, str], ...] = tuple(OWNERS)
    client: str = "redlease"
    options: Dict[str, float] = field(default_factory=dict)
    hold_ms: Tuple[float, float] = (5, 40)
    think_ms: Tuple[float, float] = (0, 20)
    topology: str = "one-redis"
    # Cluster only: a master unreachable this long is replaced by its replica (a case without
    # failover sets it well past its longest pause: 2 leases)
    node_timeout_ms: int = 10_000

    @property
    def acquire_timeout(self) -> float:
        return self.lease

    def lang(self, k: int) -> str:
        return self.langs[k % len(self.langs)]


# The short form: a 2 s lease instead of the default 30 s, so that a holder paused past its lease,
# or a partition longer than it, fits in seconds; connect and command timeouts of 0.5 s (default
# 5 s) so that a cut-off client's calls end well inside that lease and it goes on trying.
SHORT_OPTIONS = {"watchdog_timeout": 2.0, "connect_timeout": 0.5, "command_timeout": 0.5}

# One Redis: Python, Lua and OpenResty clients on the same locks.
WITH_RESTY = ("python", "lua", "openresty", "python", "lua")


def short() -> List[Case]:
    base = Case("", (), 14.0, 2.0, procs=4, options=SHORT_OPTIONS, langs=WITH_RESTY)
    cases = [replace(base, name="none")]
    cases += [replace(base, name=k, nemesis=(k,)) for k in KINDS]
    cases.append(replace(base, name="mixed", nemesis=KINDS, duration=24.0))
    return cases


def sentinel(duration: float = 40.0, lease: float = 2.0) -> List[Case]:
    """Master, replica and three sentinels: failovers (the primary killed, or cut from its
    replica and the sentinels while clients still reach it), then every kind mixed."""
    base = Case("", (), duration, lease, procs=3, options=SHORT_OPTIONS, topology="sentinel")
    cases = [replace(base, name=f"sentinel/{k}", nemesis=(k,)) for k in FAILOVER_KINDS]
    # the same with every lock write acknowledged by the replica before it counts (WAIT)
    synced = {**SHORT_OPTIONS, "sync_replicas": 1}
    cases += [replace(base, name=f"sentinel/{k}/sync_replicas", nemesis=(k,), options=synced)
              for k in FAILOVER_KINDS]
    cases.append(replace(base, name="sentinel/mixed", nemesis=KINDS + FAILOVER_KINDS,
                         duration=duration * 2))
    return cases


# The slots redis-cli --cluster create gives each of three masters.
MASTER_SLOTS = ((0, 5460), (5461, 10922), (10923, 16383))


def on_master(prefix: str, m: int) -> str:
    """The first name `prefix:i` whose slot is master m's at the cluster's creation."""
    lo, hi = MASTER_SLOTS[m]
    for i in itertools.count():
        if lo <= binascii.crc_hqx(f"{prefix}:{i}".encode(), 0) % 16384 <= hi:
            return f"{prefix}:{i}"
    raise AssertionError


# Per process: a mutex on each master, the fenced and unfenced rows on two of them.
CLUSTER_OWNERS: Tuple[Tuple[str, str], ...] = (
    ("mutex", on_master("mutex", 0)), ("mutex", on_master("mutex", 1)),
    ("mutex", on_master("mutex", 2)), ("fenced", on_master("fenced", 1)),
    ("unfenced", on_master("unfenced", 2)))


def cluster(duration: float = 40.0, lease: float = 2.0) -> List[Case]:
    """Three masters with a replica each: every kind that applies and reshards with no failover
    (node timeout past the longest pause), then with a 1 s node timeout a master killed, a master
    cut from the other nodes while clients still reach it, and everything mixed."""
    base = Case("", (), duration, lease, procs=3, options=SHORT_OPTIONS, topology="cluster",
                owners=CLUSTER_OWNERS)
    kinds = KINDS + CLUSTER_KINDS
    cases = [replace(base, name=f"cluster/{k}", nemesis=(k,)) for k in kinds]
    cases.append(replace(base, name="cluster/mixed", nemesis=kinds, duration=duration * 2))
    failover = replace(base, node_timeout_ms=1000)
    cases += [replace(failover, name=f"cluster/{k}", nemesis=(k,)) for k in FAILOVER_KINDS]
    cases.append(replace(failover, name="cluster/mixed-failover",
                         nemesis=kinds + FAILOVER_KINDS, duration=duration * 2))
    return cases


def short_cluster() -> Case:
    """The short form's Cluster case: slots of held locks moved."""
    return replace(next(c for c in cluster() if c.name == "cluster/reshard"), duration=16.0)


def clock_jump(duration: float = 60.0) -> Case:
    """One Redis whose clock jumps forward past the lease (servers.JumpingClock): measured, an
    assumption of the promise broken on purpose."""
    # holds of up to most of a lease, so that jumps land in holds that span renewals
    return Case("clock-jump", ("clock-jump",), duration, 2.0, procs=3, options=SHORT_OPTIONS,
                hold_ms=(100, 1500))


def latency(duration: float = 60.0) -> Case:
    """One Redis behind a delaying relay: round trips near the renewal period (a third of the
    lease), with a command timeout (1.5 s) that lets such calls finish."""
    return Case("latency", ("latency",), duration, 2.0, procs=3,
                options={**SHORT_OPTIONS, "connect_timeout": 1.5, "command_timeout": 1.5})


def broken() -> Case:
    """The checker's proof: a lock of SET NX PX with no renewal, its holders paused past it."""
    return Case("broken-client:pause-holder", ("pause-holder",), 14.0, 2.0, procs=3,
                owners=(("mutex", "mutex:0"), ("mutex", "mutex:0"), ("unfenced", "unfenced:0")),
                client="broken", options=SHORT_OPTIONS, langs=("python",))


def full() -> List[Case]:
    """Over 10,000 acquisitions per nemesis with the short lease (about 100 a second here), the
    mix of every nemesis again with the default 30 s lease and timeouts, the Sentinel cases, and
    the broken client."""
    base = Case("", (), 150.0, 2.0, procs=5, options=SHORT_OPTIONS, langs=WITH_RESTY,
                owners=tuple(OWNERS) + (("mutex", "mutex:1"), ("mutex", "mutex:1")))
    cases = [replace(base, name="none", duration=60.0)]
    cases += [replace(base, name=k, nemesis=(k,)) for k in KINDS]
    cases.append(replace(base, name="mixed", nemesis=KINDS, duration=300.0))
    cases.append(replace(base, name="mixed/lease-30s", nemesis=KINDS, lease=30.0, options={},
                         duration=600.0))
    cases.append(clock_jump())
    cases.append(latency(duration=240.0))  # round trips near the renewal period: ~50 a second
    cases += sentinel(duration=90.0)
    cases += cluster(duration=90.0)  # about 150 acquisitions a second: over 10,000 each
    cases.append(replace(broken(), duration=60.0))
    return cases
