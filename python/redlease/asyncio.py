"""redlease for asyncio: locks owned by the current Task, waits that never block the loop.

    from redlease.asyncio import Client

    async with Client("redis://127.0.0.1:6379/0") as client:
        async with client.lock("orders:42"):
            ...  # held by this task; the watchdog renews it

The owner of a hold is (client, asyncio Task): two tasks never share one, even on one thread,
and a task re-entering adds a hold. Network calls run on the core's worker threads; their ends
reach the loop through an eventfd it watches (or, when the loop has nothing else to run, the
call itself: _aio_idle), and a waiting acquire is woken by the core's pub/sub subscriber: no
thread per waiter, no polling, no executor. See docs/asyncio.md.
"""

import asyncio
import functools
import inspect
import weakref
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Coroutine,
    Dict,
    Literal,
    Optional,
    Set,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from . import _core
from ._aio_family import CountDownLatch, PermitExpirableSemaphore, Semaphore
from ._aio_idle import IdleWait
from ._aio_locks import FairLock, FencedLock, Lock, MultiLock, ReadWriteLock, _Answer, _Guarded
from ._client import Client as SyncClient
from ._client import ClientOptions
from ._errors import ClientClosedError
from ._events import OnState
from ._locked import Namer, NameSpec, busy, check_name, check_on_busy, check_timeout
from ._ops import Stats
from ._unset import UNSET, MaxHold

if TYPE_CHECKING:
    from typing_extensions import ParamSpec, Unpack

    _P = ParamSpec("_P")

R = TypeVar("R")

__all__ = ["Client", "Lock", "FencedLock", "FairLock", "ReadWriteLock", "Semaphore",
           "PermitExpirableSemaphore", "CountDownLatch", "MultiLock", "red_lock"]

Name = Union[str, bytes]
OnLost = Callable[[Name, str], Union[None, Awaitable[None]]]


class _Owners:
    """Each task's owner context and its acquires in progress, for one client. Nothing here
    refers to a task or to the loop (a core call's ``done`` holds its answer weakly), so the
    finalizers that hold this never keep either alive."""

    def __init__(self, sync: SyncClient, completions: _core.Completions) -> None:
        self._sync = sync
        self._completions = completions
        self._ends: "Dict[int, weakref.finalize[Any, Any]]" = {}
        self._waits: Dict[int, Set[_core.Call]] = {}
        self._others: Dict[int, Set[SyncClient]] = {}  # other clients a context holds on

    def begin(self, task: "asyncio.Task[Any]") -> int:
        """A context for the task, ended when it ends or when it is collected unfinished."""
        context = self._completions.new_context()
        end = weakref.finalize(task, self._ended, context)
        # (3.9's typeshed has no atexit among finalize's slots)
        end.atexit = False  # type: ignore[misc, unused-ignore]
        self._ends[context] = end
        task.add_done_callback(lambda _task: end())
        return context

    def waiting(self, context: int, call: _core.Call) -> None:
        self._waits.setdefault(context, set()).add(call)

    def holds_on(self, context: int, other: SyncClient) -> None:
        """The context may hold locks of another client too (a multi-lock's members): its end
        releases them there as well."""
        if other is not self._sync:
            self._others.setdefault(context, set()).add(other)

    def waited(self, context: int, call: _core.Call) -> None:
        calls = self._waits.get(context)
        if calls is not None:
            calls.discard(call)
            if not calls:
                del self._waits[context]

    def _ended(self, context: int) -> None:
        # A task that ended, that was collected unfinished, or that its closed loop will never
        # run again: an acquire still in progress is cancelled in the core (a hold it got
        # meanwhile is released there at once), then what the task holds is released on the
        # core's workers (reported as abandoned: a warning on the redlease logger).
        self._ends.pop(context, None)
        for call in self._waits.pop(context, ()):
            call.cancel()
        for client in (self._sync, *self._others.pop(context, ())):
            if not client.closed:
                self._completions.context_ended(client._core, context)

    def loop_gone(self) -> None:
        """The loop was closed (or collected): none of its tasks will run again."""
        for end in list(self._ends.values()):
            end()


class _Reader:
    """What the loop watches: it runs the Completions when their eventfd is readable, and keeps
    the answers awaited on the loop alive, as the loop keeps an I/O wait's. A closed (or
    collected) loop drops it, and its finalizer ends every task of the client left pending."""

    __slots__ = ("completions", "answers", "idle", "__weakref__")

    def __init__(self, completions: _core.Completions, idle: Optional[IdleWait]) -> None:
        self.completions = completions
        self.answers: Set[_Answer] = set()
        self.idle = idle

    def __call__(self) -> None:
        self.completions.run()


class Client:
    """A redlease client for one event loop (the loop it is first used on).

    Takes the options of ``redlease.Client``; ``on_lost(name, reason)`` may be a plain or a
    coroutine function, and runs on this client's loop. Use it as ``async with Client(...)``
    or call ``await client.close()``: waits still in progress then end with
    ``ClientClosedError``. Holds are not released by closing: they expire by their lease.
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *,
                 on_lost: Optional[OnLost] = None, on_state: Optional[OnState] = None,
                 **options: "Unpack[ClientOptions]") -> None:
        if on_lost is not None and not callable(on_lost):
            raise TypeError("on_lost must be callable or None")
        if on_state is not None and not callable(on_state):
            raise TypeError("on_state must be callable or None")
        self._on_lost = on_lost
        self._user_on_state = on_state  # called on the client's event thread
        self._sync = SyncClient(url, on_lost=self._lost_from_core if on_lost else None,
                                on_state=self._state_from_core, **options)
        self._guards: "Set[_Guarded]" = set()  # lock.guarded() bodies running now
        # The loop and its reader are held weakly: a loop dropped unclosed is collected with its
        # tasks (then their waits are cancelled and their holds released).
        self._loop: "Optional[weakref.ref[asyncio.AbstractEventLoop]]" = None
        self._reader: "Optional[weakref.ref[_Reader]]" = None
        self._completions: Optional[_core.Completions] = None
        self._owners: Optional[_Owners] = None
        self._contexts: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = (
            weakref.WeakKeyDictionary())
        self._callbacks: Set["asyncio.Task[None]"] = set()

    # ---- the loop this client serves ------------------------------------------------------

    def _loop_now(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            if self._sync.closed:
                raise ClientClosedError("the client is closed")
            self._completions = _core.Completions()
            self._owners = _Owners(self._sync, self._completions)
            reader = _Reader(self._completions, IdleWait.on(loop, self._completions))
            loop.add_reader(self._completions.fileno(), reader)
            gone = weakref.finalize(reader, self._owners.loop_gone)
            gone.atexit = False  # type: ignore[misc, unused-ignore]
            self._loop, self._reader = weakref.ref(loop), weakref.ref(reader)
        elif self._loop() is not loop:
            raise RuntimeError("a redlease.asyncio.Client serves the event loop it was first "
                               "used on; make one client per loop")
        return loop

    def _begin(self) -> "Tuple[int, _core.Completions, _Answer, _Owners]":
        """What a call of the current task needs: its owner context, the Completions, a new
        answer and the owners, with one look at the running loop (on Python 3.11 each look is a
        getpid() system call, and a lock's cycle took seven)."""
        loop = self._loop_now()
        context = self._context_on(loop)
        assert self._completions is not None and self._owners is not None
        return context, self._completions, self._answer_on(loop), self._owners

    def _completions_now(self) -> _core.Completions:
        self._loop_now()
        assert self._completions is not None
        return self._completions

    def _answer(self) -> _Answer:
        """A new answer, kept alive by the loop until the core gives it."""
        return self._answer_on(self._loop_now())

    def _answer_on(self, loop: asyncio.AbstractEventLoop) -> _Answer:
        reader = self._reader() if self._reader is not None else None
        if reader is None:  # the reader was removed by close()
            raise ClientClosedError("the client is closed")
        return _Answer(loop, reader.answers, reader.idle)

    def _context(self) -> int:
        """The current task's owner context, made on its first use and ended with the task."""
        return self._context_on(self._loop_now())

    def _context_on(self, loop: asyncio.AbstractEventLoop) -> int:
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("redlease.asyncio locks are used from inside an asyncio task")
        context = self._contexts.get(task)
        if context is None:
            assert self._owners is not None
            context = self._owners.begin(task)
            self._contexts[task] = context
        return context

    def _owners_now(self) -> _Owners:
        self._loop_now()
        assert self._owners is not None
        return self._owners

    # ---- loss reports ---------------------------------------------------------------------

    def _lost_from_core(self, name: Name, reason: str) -> None:  # the core's event thread
        loop = self._loop() if self._loop is not None else None
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._run_on_lost, name, reason)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _state_from_core(self, name: Name, state: str, why: str) -> None:  # the event thread
        if self._user_on_state is not None:
            self._user_on_state(name, state, why)
        loop = self._loop() if self._loop is not None else None
        if state != "held" and self._guards and loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._look_at_guards, name)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _look_at_guards(self, name: Name) -> None:
        for guard in [g for g in self._guards if g.concerns(name)]:
            guard.look()

    def _guards_now(self) -> "Set[_Guarded]":
        return self._guards

    def _run_on_lost(self, name: Name, reason: str) -> None:
        assert self._on_lost is not None
        result = self._on_lost(name, reason)
        if inspect.isawaitable(result):
            async def run() -> None:
                await result
            task = asyncio.ensure_future(run())
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)

    # ---- locks ----------------------------------------------------------------------------

    def lock(self, name: Name, *, timeout: float = -1, lease: Optional[float] = None,
             max_hold: MaxHold = UNSET) -> Lock:
        """A Redisson RLock on ``name``; ``timeout`` (-1 forever, 0 one try), ``lease`` (None:
        watchdog) and ``max_hold`` as ``redlease.Client.lock``."""
        return Lock(self, self._sync.lock(name), timeout, lease, max_hold)

    def fenced_lock(self, name: Name, *, timeout: float = -1, lease: Optional[float] = None,
                    max_hold: MaxHold = UNSET) -> FencedLock:
        """A Redisson RFencedLock: as ``lock()``, with ``lock.token``."""
        return FencedLock(self, self._sync.fenced_lock(name), timeout, lease, max_hold)

    def fair_lock(self, name: Name, *, timeout: float = -1, lease: Optional[float] = None,
                  max_hold: MaxHold = UNSET) -> FairLock:
        """A Redisson RFairLock: as ``lock()``, waiters in arrival order."""
        return FairLock(self, self._sync.fair_lock(name), timeout, lease, max_hold)

    def rw_lock(self, name: Name, *, timeout: float = -1, lease: Optional[float] = None,
                max_hold: MaxHold = UNSET) -> ReadWriteLock:
        """A Redisson RReadWriteLock: ``.read`` (shared) and ``.write`` (exclusive)."""
        rw = self._sync.rw_lock(name)
        return ReadWriteLock(Lock(self, rw.read, timeout, lease, max_hold),
                             Lock(self, rw.write, timeout, lease, max_hold))

    @overload
    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: Literal["skip"] = "skip",
               max_hold: MaxHold = UNSET,
               ) -> "Callable[[Callable[_P, Awaitable[R]]], Callable[_P, Coroutine[Any, Any, Optional[R]]]]": ...  # noqa: E501

    @overload
    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: Literal["raise"],
               max_hold: MaxHold = UNSET,
               ) -> "Callable[[Callable[_P, Awaitable[R]]], Callable[_P, Coroutine[Any, Any, R]]]": ...  # noqa: E501

    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: str = "skip",
               max_hold: MaxHold = UNSET,
               ) -> "Callable[[Callable[_P, Awaitable[R]]], Callable[_P, Awaitable[Any]]]":
        """A decorator for a coroutine function: each call runs holding the lock ``name``,
        owned by the calling task, as ``redlease.Client.locked`` (same ``name``, ``timeout``
        (default 0: one try), ``on_busy`` (``"skip"``: log and return None; ``"raise"``:
        LockTimeout) and ``max_hold``)."""
        check_name(name)
        timeout = check_timeout(timeout)
        check_on_busy(on_busy)

        def decorate(func: "Callable[_P, Awaitable[R]]",
                     ) -> "Callable[_P, Coroutine[Any, Any, Any]]":
            if not inspect.iscoroutinefunction(func):
                raise TypeError(f"{func.__qualname__} is not a coroutine function: decorate it "
                                "with redlease.Client.locked")
            namer = Namer(name, func)

            @functools.wraps(func)
            async def run(*args: "_P.args", **kwargs: "_P.kwargs") -> Any:
                lock_name = namer(args, kwargs)
                lock = self.lock(lock_name, max_hold=max_hold)
                if not await lock.acquire(timeout=timeout):
                    busy(lock_name, func, on_busy)
                    return None
                try:
                    return await func(*args, **kwargs)
                finally:
                    await lock.release()
            return run
        return decorate

    # ---- the rest of the family -----------------------------------------------------------

    def semaphore(self, name: Name, *, timeout: float = -1) -> Semaphore:
        """A Redisson RSemaphore on ``name`` (permits belong to the client); ``timeout`` for
        ``async with`` and acquire() without one (-1 forever, 0 one try)."""
        return Semaphore(self, self._sync.semaphore(name, timeout=timeout), timeout)

    def permit_expirable_semaphore(self, name: Name) -> PermitExpirableSemaphore:
        """A Redisson RPermitExpirableSemaphore on ``name``: permits with ids and leases."""
        return PermitExpirableSemaphore(self, self._sync.permit_expirable_semaphore(name))

    def count_down_latch(self, name: Name) -> CountDownLatch:
        """A Redisson RCountDownLatch on ``name``."""
        return CountDownLatch(self, self._sync.count_down_latch(name))

    def multi_lock(self, *locks: Lock, timeout: float = -1, lease: Optional[float] = None,
                   max_hold: MaxHold = UNSET) -> MultiLock:
        """Locks (of any redlease.asyncio clients) taken as one by the current task, all or
        none, with RedissonMultiLock's rules; ``timeout``, ``lease``, ``max_hold`` as lock()."""
        return MultiLock(self, locks, False, timeout, lease, max_hold)

    # ---- the client -----------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The client's UUID: owner fields in Redis read ``<id>:<task context>``."""
        return self._sync.id

    @property
    def url(self) -> str:
        """The URL, its password replaced by ***."""
        return self._sync.url

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._sync.closed

    @property
    def sync(self) -> SyncClient:
        """The blocking client underneath (same connections and watchdog), for threads."""
        return self._sync

    def stats(self) -> Stats:
        """The client's counters (see ``redlease.Client.stats``)."""
        return self._sync.stats()

    async def close(self) -> None:
        """Closes the client: waits in progress end with ClientClosedError. Idempotent."""
        self._sync.close()  # joins the core's threads: every call in progress has ended
        if self._completions is not None:
            self._completions.run()  # their answers, now
            loop = self._loop() if self._loop is not None else None
            if loop is not None and not loop.is_closed():
                loop.remove_reader(self._completions.fileno())
        await asyncio.sleep(0)

    async def __aenter__(self) -> "Client":
        self._loop_now()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.id
        return f"<redlease.asyncio.Client {self.url!r} {state}>"


def red_lock(*locks: Lock, timeout: float = -1, lease: Optional[float] = None,
             max_hold: MaxHold = UNSET) -> MultiLock:
    """A RedLock over ``locks``, each made by a client of its own independent Redis server, owned
    by the current task (see redlease.red_lock); answers reach the loop through the first lock's
    client."""
    if not locks:
        raise ValueError("a RedLock needs locks")
    return MultiLock(locks[0]._client, locks, True, timeout, lease, max_hold)
