"""The exceptions redlease raises. All derive from LockError."""

import builtins


class LockError(Exception):
    """Base class of every redlease error."""


class LockTimeout(LockError):
    """A ``with`` block could not acquire its lock within the lock's timeout."""


class NotOwnedError(LockError, RuntimeError):
    """Release (or use) by a thread that does not hold the lock, as threading's RuntimeError."""


class LockLostError(LockError):
    """The calling thread's hold was lost while held; ``reason`` says how.

    Reasons: ``expired`` (the lease ran out before it could be renewed), ``deleted`` (someone
    deleted or force-unlocked it, or Redis lost its data), ``owner_changed`` (another owner holds
    it now), ``unreachable`` (Redis could not be reached before the lease ran out), ``max_hold``,
    ``failover`` (the server that answers changed, by a failover or a restart, and lacks it).
    """

    def __init__(self, message: str, reason: str = "unknown") -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> "tuple[type, tuple[str, str]]":  # keeps .reason through pickle
        return (type(self), (str(self), self.reason))


class LockInDoubtError(LockError):
    """``lock.check()``: the calling thread's hold may still be valid, but not surely for as long
    as asked: a renewal failed or is late, or its lease is ending. Stop starting work that needs
    the lock; it is held again once a renewal is confirmed (``lock.in_doubt`` turns False)."""


class ConnectionError(LockError, builtins.ConnectionError):  # noqa: A001 - the contract's name
    """Redis could not be reached: refused, timed out, or authentication failed."""


class ServerError(LockError):
    """Redis refused a command, e.g. WRONGTYPE when the name holds another type of value."""


class ClientClosedError(LockError):
    """The client was closed; its locks can no longer be used."""


class ReplicaSyncError(LockError):
    """With ``sync_replicas``: replicas are connected but none acknowledged the acquire in time;
    with ``sync_aof``: the acquire was not on the server's (or the replicas') disk in time. The
    acquire was taken back; nothing is held."""
