"""The shapes of what ``Client.inspect``, ``Lock.owner`` and ``Client.stats`` answer."""

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, TypedDict


@dataclass(frozen=True)
class Owner:
    """One owner of a lock (``lock.owner()``): its field ``<client_id>:<context>`` (``:write``
    for a writer) decoded, and the name of the owning client when one of its connections to the
    lock's server tells it."""

    field: str
    client_id: str  # the owning client's UUID ("" when the field is not UUID-shaped)
    context: str  # its thread (Python, Redisson) or coroutine (Lua) id
    count: int  # holds
    lease: Optional[float]  # seconds left: a reader's longest hold, else the lock's
    write: bool  # the writer of a read/write lock
    local: bool  # a client of this process holds it
    name: Optional[str] = None  # its client_name, else "<host>:<pid>"; None: not known

    def __getitem__(self, key: str) -> Any:
        """``owner["count"]``, as when owners were dicts: deprecated, use ``owner.count``."""
        warnings.warn(f"Owner is an object now: use owner.{key}, not owner[{key!r}]",
                      DeprecationWarning, stacklevel=2)
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)


class InspectedOwner(TypedDict):
    """An owner as ``Client.inspect`` gives it: Owner's fields, in a JSON-ready dict."""

    field: str
    client_id: str
    context: str
    count: int
    lease: Optional[float]
    write: bool
    local: bool
    name: Optional[str]


class Waiter(TypedDict):
    """A fair lock's queued waiter."""

    owner: str
    client_id: str
    context: str
    timeout: float  # seconds its place in the queue lasts
    name: Optional[str]  # its client's name, as Owner.name


class Inspection(TypedDict):
    """What a key holds. ``kind``: none, reentrant, fenced, fair, read_write, counter (a
    semaphore or count-down latch), other (not lock-shaped)."""

    kind: str
    type: str  # Redis TYPE
    mode: Optional[str]  # read/write locks: "read" or "write"
    lease: Optional[float]  # seconds (inf: no expiry; None: no key)
    count: int  # counters: the value
    last_token: int  # fenced: the last fencing token (0: none)
    subscribers: int  # connections subscribed to the kind's unlock channel(s)
    owners: List[InspectedOwner]
    queue: List[Waiter]


class Stats(TypedDict):
    """``Client.stats()``: counters since the client was made, and gauges (now)."""

    acquisitions: int  # acquires that took a hold, re-entries included
    waits: int  # acquires that found the lock held and waited
    wait_seconds_total: float
    wait_seconds_max: float
    lost_total: int  # holds lost while held
    lost: Dict[str, int]  # ... by reason: expired, deleted, owner_changed, unreachable, max_hold,
    # failover
    holds: int  # (lock, thread) holds now
    in_doubt: int  # ... of which in doubt now (a renewal failed; may still be valid)
    in_doubt_total: int  # times a hold went in doubt
    server_changes: int  # holds found on another server than before (failover, restart)
    master_changes: int  # new masters followed (Sentinel failovers, Cluster slots moved)
    sync_waits: int  # sync_replicas: lock writes followed by a WAIT
    sync_acks: int  # ... the replicas' acknowledgements of them, in total
    sync_skipped: int  # ... writes that stood unreplicated: no replica was listed
    woken_acquires: int  # acquires the subscriber thread sent for a waiter a release woke
    waiters: int  # acquires waiting now
    renew_rounds: int  # watchdog renewal rounds that reached Redis
    renew_failed_rounds: int  # rounds that failed on the network (retried)
    renew_round_trips: int
    renew_calls: int
    renewed_holds: int
    last_round_holds: int
    watchdog_running: bool
    subscriptions: int  # channels the subscriber connection listens on
    last_round_us: int  # the most recent renewal round's duration
    renew_round_us: int  # wall time of every round that reached Redis, in total
    last_round_nodes: int  # servers the most recent round went to (a cluster's nodes)
    cluster_refreshes: int  # redis+cluster://: slot maps fetched so far
