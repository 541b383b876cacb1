"""The locks of redlease.asyncio: thin awaitable wrappers over the core's async calls.

Every call starts in the core (it runs on the client's worker threads) and ends through the
client's Completions on the loop (inside the call when the loop is idle: _aio_idle); nothing here
blocks the loop, polls or uses an executor.
"""

import asyncio
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from . import _core
from ._aio_idle import IdleWait
from ._errors import LockError, LockLostError, LockTimeout
from ._ops import Owner
from ._unset import UNSET, MaxHold, Unset

if TYPE_CHECKING:
    from .asyncio import Client

_QUERY_LOCKED, _QUERY_HELD, _QUERY_HOLD_COUNT, _QUERY_REMAINING = 1, 2, 3, 4


class _Answer:
    """The core's answer to one call, given on the loop (through its ``done``). The task awaits
    ``fut``; a cancellation of the task cancels ``fut``, but the answer is still kept and can be
    waited for with ``through_cancels``. Until it comes, the answer is in ``answers`` (the loop's
    reader's): the loop keeps it, its future and the task alive, as it keeps an I/O wait's."""

    __slots__ = ("loop", "answers", "idle", "fut", "late", "ready", "value", "error",
                 "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, answers: "Set[_Answer]",
                 idle: Optional[IdleWait]) -> None:
        self.loop = loop
        self.answers = answers
        self.idle = idle
        self.fut: "asyncio.Future[Any]" = loop.create_future()
        self.late: "Optional[asyncio.Future[Any]]" = None
        self.ready = False
        self.value: Any = None
        self.error: Optional[BaseException] = None
        answers.add(self)

    @property
    def done(self) -> "_Done":
        """The ``done`` to give the core."""
        return _Done(self)

    def result(self) -> "asyncio.Future[Any]":
        """The future to await, once the call has started: answered already when the answer
        came while the loop had nothing else to run (_aio_idle)."""
        if self.idle is not None and not self.ready:
            self.idle(self.loop)
        return self.fut

    def __call__(self, value: Any, error: Optional[BaseException]) -> None:
        self.ready, self.value, self.error = True, value, error
        self.answers.discard(self)
        if self.loop.is_closed():  # answered by close() after the loop's end: no one awaits
            return
        # the future someone awaits: `late` once through_cancels runs, else `fut`
        target = self.late if self.late is not None else self.fut
        if not target.done():
            if error is not None:
                target.set_exception(error)
            else:
                target.set_result(value)

    async def through_cancels(self) -> int:
        """Waits for the answer whatever cancellations arrive meanwhile; how many did."""
        cancels = 0
        while not self.ready:
            self.late = self.loop.create_future()
            try:
                await self.late
            except asyncio.CancelledError:
                cancels += 1
            except Exception:  # the answer is an error: kept in self.error
                pass
        return cancels


class _Done:
    """The ``done`` a core call holds: its answer, weakly, so that the core never keeps a task
    alive (a task collected unfinished has its waits cancelled and its holds released)."""

    __slots__ = ("answer",)

    def __init__(self, answer: _Answer) -> None:
        self.answer = weakref.ref(answer)

    def __call__(self, value: Any, error: Optional[BaseException]) -> None:
        answer = self.answer()
        if answer is not None:
            answer(value, error)


_Start = Callable[[_core.Completions, int, "_Done"], _core.Call]


async def _acquire(client: "Client", start: _Start, release: _Start) -> bool:
    """An acquire for the current task: True, or False when not acquired in time. Cancelled, it
    leaves nothing held: a waiting acquire stops, one in flight releases what it got, and one
    that ended before the cancel came is released here."""
    context, comp, answer, owners = client._begin()
    call = start(comp, context, answer.done)
    owners.waiting(context, call)  # cancelled if the task is gone or its loop closed
    try:
        return bool(await answer.result())
    except asyncio.CancelledError:
        call.cancel()
        await answer.through_cancels()
        if answer.error is None and answer.value:  # it ended before the cancel came
            undo = client._answer()
            release(comp, context, undo.done)
            await undo.through_cancels()
        raise
    except GeneratorExit:  # the coroutine was closed unfinished: it can await no more
        call.cancel()
        raise
    finally:
        owners.waited(context, call)



def _acquire_args(obj: Any, blocking: bool, timeout: Optional[float],
                  lease: Union[float, None, Unset], max_hold: MaxHold
                  ) -> Tuple[float, Optional[float], Dict[str, Any]]:
    """An acquire's wait, lease and keyword extras, each defaulting to obj's (a Lock's or a
    MultiLock's _timeout, _lease, _max_hold)."""
    if not blocking:
        if timeout is not None and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        timeout = 0
    wait = obj._timeout if timeout is None else timeout
    hold = obj._lease if lease is UNSET else lease
    cap = obj._max_hold if max_hold is UNSET else max_hold
    return wait, hold, {} if cap is UNSET else {"max_hold": cap}

class Lock:
    """A lock owned by the current asyncio Task (see docs/asyncio.md). Made by Client.lock()."""

    def __init__(self, client: "Client", core: _core.Lock, timeout: float, lease: Optional[float],
                 max_hold: MaxHold) -> None:
        self._client = client
        self._core = core
        self._timeout = timeout
        self._lease = lease
        self._max_hold = max_hold

    @property
    def name(self) -> Union[str, bytes]:
        """The lock's name, as given (str or bytes)."""
        return self._core.name

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None,
                      lease: Union[float, None, Unset] = UNSET, *,
                      max_hold: MaxHold = UNSET) -> bool:
        """Takes one hold for the current task: True, or False when not acquired in time.
        ``timeout`` (seconds; -1 forever, 0 or ``blocking=False`` one try) and ``lease`` (None:
        watchdog) default to the lock's. Cancelled, it leaves nothing held."""
        wait, hold, extra = _acquire_args(self, blocking, timeout, lease, max_hold)
        return await _acquire(
            self._client,
            lambda comp, context, done: comp.acquire(self._core, context, wait, hold, done,
                                                     **extra),
            lambda comp, context, done: comp.release(self._core, context, done))

    async def release(self) -> None:
        """Releases one hold of the current task (NotOwnedError when it holds none;
        LockLostError when the hold was lost). Cancelled, it still completes, then raises
        CancelledError."""
        context, comp, answer, _ = self._client._begin()
        comp.release(self._core, context, answer.done)
        try:  # as _finish, inline: one coroutine less on every release
            await answer.result()
        except asyncio.CancelledError:
            await answer.through_cancels()
            raise

    @staticmethod
    async def _finish(answer: _Answer) -> Any:
        """The answer of a call that runs to its end even when the task is cancelled
        (CancelledError is raised once it has ended)."""
        try:
            return await answer.result()
        except asyncio.CancelledError:
            await answer.through_cancels()
            raise

    async def __aenter__(self) -> "Lock":
        if not await self.acquire():
            raise LockTimeout(f"lock {self.name!r} is held by another owner; not acquired "
                              f"within {self._timeout:.3f} s")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()

    def guarded(self) -> "_Guarded":
        """``async with lock.guarded():`` acquires as ``async with lock:`` does, and cancels the
        body when the hold is lost, or when its deadline passes with no renewal confirmed, so
        that the task cannot go on writing without the lock. The block then raises
        LockLostError (or LockInDoubtError: no longer guaranteed, not known lost) instead of
        CancelledError."""
        return _Guarded(self)

    def _state(self) -> Tuple[int, Optional[str], int]:
        return self._client._completions_now().local_state(self._core,
                                                           self._client._context())

    @property
    def hold_count(self) -> int:
        """The current task's holds, as this client knows them (no round trip)."""
        return self._state()[0]

    def held(self) -> bool:
        """Whether the current task holds it, as this client knows (no round trip)."""
        return self._state()[0] > 0

    @property
    def lost(self) -> bool:
        """Whether the current task's hold was lost while held."""
        return self._state()[1] is not None

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the current task's hold was lost ('expired', 'deleted', ...), or None."""
        return self._state()[1]

    @property
    def in_doubt(self) -> bool:
        """Whether the current task's hold is in doubt: a renewal failed or is late (see
        redlease.Lock.in_doubt)."""
        return self._core._validity(self._client._context())[0] == _core.HOLD_IN_DOUBT

    @property
    def deadline(self) -> float:
        """The loop-clock (time.monotonic()) time until which the current task's hold is
        guaranteed, for ``asyncio.timeout_at(lock.deadline)``; 0.0 when nothing is."""
        return self._core._validity(self._client._context())[1]

    def valid_for(self) -> float:
        """Seconds for which the current task's hold is still guaranteed; 0.0 when none."""
        deadline = self.deadline
        return max(0.0, deadline - time.monotonic()) if deadline else 0.0

    def check(self, min_left: float = 0.0) -> float:
        """As redlease.Lock.check(), for the current task's hold."""
        return self._core._check(self._client._context(), min_left)

    async def _query(self, what: int) -> int:
        comp = self._client._completions_now()
        answer = self._client._answer()
        comp.query(self._core, what, self._client._context(), answer.done)
        return int(await self._finish(answer))

    async def locked(self) -> bool:
        """Whether anyone holds it (one round trip)."""
        return bool(await self._query(_QUERY_LOCKED))

    async def remaining(self) -> Optional[float]:
        """Lease left in seconds; None when not locked, -1.0 when the key has no expiry."""
        ms = await self._query(_QUERY_REMAINING)
        return None if ms == -2 else -1.0 if ms == -1 else ms / 1000.0

    async def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it; True when it was held."""
        answer = self._client._answer()
        self._client._completions_now().force_unlock(self._core, answer.done)
        return bool(await self._finish(answer))

    async def owner(self) -> List[Owner]:
        """Who holds it, from Redis, as redlease.Lock.owner() (one inspection)."""
        answer = self._client._answer()
        self._client._completions_now().owner(self._core, answer.done)
        owners: List[Owner] = await self._finish(answer)
        return owners

    def __repr__(self) -> str:
        return f"<redlease.asyncio.{type(self).__name__} {self.name!r}>"


class FencedLock(Lock):
    """A fenced lock: every acquire takes a strictly increasing fencing token."""

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current task's latest acquire while it holds it."""
        token = self._state()[2]
        return token or None


class FairLock(Lock):
    """A fair lock: waiters (tasks, threads, processes, Redisson) acquire in arrival order."""


class ReadWriteLock:
    """A read/write lock: ``.read`` is shared, ``.write`` exclusive; both are locks."""

    def __init__(self, read: Lock, write: Lock) -> None:
        self.read = read
        self.write = write


class MultiLock:
    """Several locks (any kinds, any clients) taken as one by the current task, with
    RedissonMultiLock's rules; a RedLock when made by red_lock(). Made by Client.multi_lock()."""

    def __init__(self, client: "Client", locks: Sequence[Lock], redlock: bool, timeout: float,
                 lease: Optional[float], max_hold: MaxHold) -> None:
        if not all(isinstance(lock, Lock) for lock in locks):
            raise TypeError("a multi-lock takes redlease.asyncio locks")
        extra = {} if max_hold is UNSET else {"max_hold": max_hold}
        self._client = client
        self._locks = tuple(locks)
        self._core = _core.MultiLock([lock._core for lock in locks], redlock=redlock,
                                     timeout=timeout, lease=lease, **extra)
        self._timeout = timeout
        self._lease = lease
        self._max_hold = max_hold

    @property
    def locks(self) -> Tuple[Lock, ...]:
        """The locks it takes as one, in the order given."""
        return self._locks

    @property
    def redlock(self) -> bool:
        """True for a RedLock (a majority of independent servers), False for a multi-lock."""
        return self._core.redlock

    @property
    def held(self) -> int:
        """How many of its locks the current task holds (no round trip)."""
        return self._core._held_by(self._client._context())

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None,
                      lease: Union[float, None, Unset] = UNSET, *,
                      max_hold: MaxHold = UNSET) -> bool:
        """Takes every lock (a RedLock: a majority) for the current task, all or none, within
        one timeout; arguments as Lock.acquire's. Cancelled, it leaves nothing held."""
        wait, hold, extra = _acquire_args(self, blocking, timeout, lease, max_hold)
        owners, context = self._client._owners_now(), self._client._context()
        for lock in self._locks:  # the task's end releases its holds on every member's client
            owners.holds_on(context, lock._client.sync)
        return await _acquire(
            self._client,
            lambda comp, context, done: comp.multilock_acquire(self._core, context, wait, hold,
                                                               done, **extra),
            lambda comp, context, done: comp.multilock_release(self._core, context, done))

    async def release(self) -> None:
        """Releases every lock of it the current task holds (RedLock: on every server);
        NotOwnedError when it holds none. Cancelled, it still completes."""
        answer = self._client._answer()
        self._client._completions_now().multilock_release(self._core, self._client._context(),
                                                          answer.done)
        await Lock._finish(answer)

    async def __aenter__(self) -> "MultiLock":
        if not await self.acquire():
            kind = "RedLock" if self.redlock else "multi-lock"
            raise LockTimeout(f"{kind} of {len(self._locks)} locks not acquired within "
                              f"{self._timeout:.3f} s")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()

    def __repr__(self) -> str:
        kind = "RedLock" if self.redlock else "MultiLock"
        return f"<redlease.asyncio.{kind} {[lock.name for lock in self._locks]!r}>"


class _Guarded:
    """``lock.guarded()``: the hold's body, cancelled when the hold stops being guaranteed.

    A timer on the loop fires at the hold's deadline and moves with it while renewals come; the
    client's state events (lost, in doubt) make it look at once. The task is cancelled when the
    hold is lost, or when its deadline has passed."""

    def __init__(self, lock: Lock) -> None:
        self._lock = lock
        self._task: "Optional[asyncio.Task[Any]]" = None
        self._context = 0
        self._timer: Optional[asyncio.TimerHandle] = None
        self._cut: Optional[BaseException] = None  # why the body was cancelled

    async def __aenter__(self) -> Lock:
        await self._lock.__aenter__()
        self._task = asyncio.current_task()
        self._context = self._lock._client._context()
        self._lock._client._guards_now().add(self)
        self.look()
        return self._lock

    def look(self) -> None:
        """On the loop: cancel the body if the hold is no longer guaranteed, else look again at
        its deadline."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cut is not None or self._task is None:
            return
        state, deadline = self._lock._core._validity(self._context)
        left = deadline - time.monotonic()
        if state == _core.HOLD_LOST or state == _core.HOLD_NONE or left <= 0:
            try:
                self._lock._core._check(self._context, 0.0)
                self._cut = LockLostError(f"lock {self._lock.name!r}: its hold ended", "expired")
            except LockError as e:
                self._cut = e
            self._task.cancel(f"redlease: {self._cut}")
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(left, self.look)

    def concerns(self, name: Any) -> bool:
        return bool(self._lock.name == name)

    async def __aexit__(self, exc_type: Optional[type], exc: Optional[BaseException],
                        tb: Any) -> bool:
        if self._timer is not None:
            self._timer.cancel()
        self._lock._client._guards_now().discard(self)
        cut = self._cut
        if cut is not None and self._task is not None and hasattr(self._task, "uncancel"):
            self._task.uncancel()  # our cancellation, not the caller's
        try:
            await self._lock.release()
        except LockError:
            if cut is None:
                raise
        if cut is not None and (exc_type is None or issubclass(exc_type, asyncio.CancelledError)):
            raise cut
        return False
