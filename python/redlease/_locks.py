"""The lock kinds beyond the reentrant lock: fencing tokens, the fair lock, the read/write lock.

Each is a ``redlease.Lock`` (the same API: ``with``, ``acquire``, ``release``, ``hold_count``,
``lost``...) stored in the layout of its Redisson counterpart; the kinds differ only in what
acquiring means, which the core knows.
"""

import typing
from typing import Dict, Optional, Union

from . import _core
from ._core import Lock

_Name = Union[str, bytes]


class FencedLock(Lock):
    """A Redisson RFencedLock: every acquisition, reentrant ones included, also takes a fencing
    token, strictly greater than every token taken before it on this name.

    Pass the token with every write made under the lock; the storage keeps the greatest token it
    has seen and refuses a write with a smaller one. A holder that stalled past its lease (and
    lost the lock to a newer holder) is then refused instead of overwriting newer data.
    """

    __slots__ = ()

    @property
    def token(self) -> Optional[int]:
        """The token of the calling thread's latest acquisition while it holds the lock, else
        None."""
        return self._token() or None

    def acquire_token(self, blocking: bool = True, **options: typing.Any) -> Optional[int]:
        """``acquire(blocking, timeout=, lease=, max_hold=)``, answering the token taken, or None
        when not acquired. Options left out take the values given when the lock was made."""
        return self.token if self.acquire(blocking, **options) else None


class FairLock(Lock):
    """A Redisson RFairLock: waiters acquire in the order they arrived. A waiter that gives up
    leaves the queue; one that died keeps its place for at most its wait window (its timeout, or
    five minutes when it waits without one)."""

    __slots__ = ()


class ReadLock(Lock):
    """The read side of a ``ReadWriteLock``: shared by any number of holders while no one writes.
    Each read hold has its own lease; the watchdog renews only this client's. A reader never
    upgrades: taking the write side while holding the read side waits (or times out)."""

    __slots__ = ()


class WriteLock(Lock):
    """The write side of a ``ReadWriteLock``: exclusive. Its holder may also take the read side
    (downgrade): after the write release it keeps reading while others may join."""

    __slots__ = ()


class ReadWriteLock:
    """A Redisson RReadWriteLock on one name: many readers or one writer.

    ``rw.read`` and ``rw.write`` are locks with the full lock API::

        rw = client.rw_lock("catalog")
        with rw.read:
            ...  # shared with other readers, in any process (or Redisson)
        with rw.write:
            ...  # alone
    """

    __slots__ = ("read", "write")

    def __init__(self, read: ReadLock, write: WriteLock) -> None:
        self.read = read
        self.write = write

    @property
    def name(self) -> _Name:
        """The lock's name, as given."""
        return self.read.name

    def __repr__(self) -> str:
        return f"<redlease.ReadWriteLock {self.name!r}>"


KINDS: Dict[type, int] = {
    FencedLock: _core.KIND_FENCED,
    FairLock: _core.KIND_FAIR,
    ReadLock: _core.KIND_READ,
    WriteLock: _core.KIND_WRITE,
}
