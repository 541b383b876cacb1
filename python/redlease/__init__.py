"""redlease: Redisson-compatible distributed locks on Redis.

    import redlease

    client = redlease.Client("redis://127.0.0.1:6379/0")
    with client.lock("orders:42"):
        ...  # held; the watchdog renews the lease while this block runs

Locks are stored in Redisson's format, so redlease (Python, Lua) and Redisson (Java) exclude each
other on the same name; so are semaphores, permit-expirable semaphores and count-down latches.
See docs/python.md for the full API.
"""

from ._client import Client
from ._core import CORE_VERSION as __version__
from ._core import Lock, tls_supported
from ._errors import (
    ClientClosedError,
    ConnectionError,
    LockError,
    LockInDoubtError,
    LockLostError,
    LockTimeout,
    NotOwnedError,
    ReplicaSyncError,
    ServerError,
)
from ._family import (
    CountDownLatch,
    MultiLock,
    PermitExpirableSemaphore,
    Semaphore,
    red_lock,
)
from ._locks import FairLock, FencedLock, ReadLock, ReadWriteLock, WriteLock
from ._ops import InspectedOwner, Inspection, Owner, Stats, Waiter

__all__ = [
    "__version__",
    "Client",
    "Lock",
    "FencedLock",
    "FairLock",
    "ReadWriteLock",
    "ReadLock",
    "WriteLock",
    "tls_supported",
    "Semaphore",
    "PermitExpirableSemaphore",
    "CountDownLatch",
    "MultiLock",
    "red_lock",
    "LockError",
    "LockTimeout",
    "NotOwnedError",
    "LockLostError",
    "LockInDoubtError",
    "ConnectionError",
    "ServerError",
    "ClientClosedError",
    "ReplicaSyncError",
    "Inspection",
    "InspectedOwner",
    "Owner",
    "Stats",
    "Waiter",
]
