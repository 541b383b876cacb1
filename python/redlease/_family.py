"""The rest of Redisson's lock family: semaphores, permit-expirable semaphores, count-down
latches, multi-locks and RedLock. Each is the C core's (``redlease._core``); this module adds the
Python habits the core has no need of: the ``permit()`` context manager and ``red_lock()``.

Stored in the layout of Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch, so
Java services on Redisson and redlease's Python and Lua workers share them (docs/protocol.md).
"""

import contextlib
from collections.abc import Iterator
from typing import Optional

from . import _core
from ._core import CountDownLatch, Lock, MultiLock, Semaphore
from ._unset import UNSET, MaxHold

__all__ = ["Semaphore", "PermitExpirableSemaphore", "CountDownLatch", "MultiLock", "red_lock"]


class PermitExpirableSemaphore(_core.PermitExpirableSemaphore):
    """A Redisson RPermitExpirableSemaphore: each permit taken has an id and a lease, and comes
    back by itself when its lease runs out, so a crashed worker's permit is not lost.

    ``acquire(lease, timeout=-1)`` answers the permit's id (or None when none came in time);
    ``lease=None`` has the client's watchdog renew the permit until it is released (redlease's
    addition: Redisson has no renewal of permits). ``release(permit_id)`` gives it back.
    """

    __slots__ = ()

    @contextlib.contextmanager
    def permit(self, lease: Optional[float], timeout: float = -1) -> Iterator[str]:
        """``with sem.permit(lease) as permit_id:`` takes a permit for the block and gives it
        back at its end; LockTimeout when none came within ``timeout`` seconds."""
        permit_id = self._take(lease, timeout)  # LockTimeout in the core's words
        try:
            yield permit_id
        finally:
            self.release(permit_id)


def red_lock(*locks: Lock, timeout: float = -1, lease: Optional[float] = None,
             max_hold: MaxHold = UNSET) -> MultiLock:
    """A RedLock over ``locks``, each made by a client of its own independent Redis server: held
    once a majority of them is taken within the lease's validity, released on every server.

    Use it only where the servers fail independently and a lost lock is tolerable; a fencing
    token checked by the storage is what protects data against a holder that paused past its
    lease (see docs/semantics.md, "RedLock").
    """
    if max_hold is UNSET:
        return MultiLock(locks, redlock=True, timeout=timeout, lease=lease)
    return MultiLock(locks, redlock=True, timeout=timeout, lease=lease, max_hold=max_hold)
