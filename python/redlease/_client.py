"""redlease.Client: one connection set, watchdog and subscriber per process (or per Redis)."""

import atexit
import functools
import inspect
import os
import weakref
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterator,
    Literal,
    Optional,
    TypedDict,
    TypeVar,
    Union,
    cast,
    overload,
)

from . import _core, _green
from ._core import CountDownLatch, Lock, MultiLock, Semaphore
from ._events import EventDispatcher, OnLost, OnState
from ._family import PermitExpirableSemaphore
from ._locked import Namer, NameSpec, busy, check_name, check_on_busy, check_timeout, run_alone
from ._locks import KINDS, FairLock, FencedLock, ReadLock, ReadWriteLock, WriteLock
from ._ops import Inspection, Stats
from ._unset import UNSET, MaxHold

if TYPE_CHECKING:
    from typing_extensions import ParamSpec, Unpack

    _P = ParamSpec("_P")

L = TypeVar("L", bound=Lock)
R = TypeVar("R")
_Path = Union[str, "os.PathLike[str]"]


class ClientOptions(TypedDict, total=False):
    """The options ``Client`` takes by keyword, as the core's catalogue names them
    (csrc/core/options.c); None leaves one at its default. For type checkers only: the keywords
    go to the core as they are."""
    watchdog_timeout: Optional[float]
    connect_timeout: Optional[float]
    command_timeout: Optional[float]
    max_hold: Optional[float]
    sync_replicas: Optional[int]
    sync_aof: Optional[bool]
    sync_timeout: Optional[float]
    handover_grace: Optional[float]
    failover_grace: Optional[float]
    drift_factor: Optional[float]
    tls_ca_file: Optional[_Path]
    tls_ca_dir: Optional[_Path]
    tls_cert_file: Optional[_Path]
    tls_key_file: Optional[_Path]
    tls_server_name: Optional[str]
    tls_insecure_skip_verify: Optional[bool]
    sentinel_user: Optional[str]
    sentinel_password: Optional[str]
    client_name: Optional[str]

# Clients still open when the interpreter exits are closed first, while calling into Python from
# their event threads is still safe.
_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


@atexit.register
def _close_open_clients() -> None:
    for client in list(_open_clients):
        client.close()


class Client:
    """A connection to one Redis deployment, shared by every thread of the process.

    ``url``: ``redis://[user[:password]@]host[:port][/db]``,
    ``unix://[user[:password]@]/path[?db=N]``, ``rediss://...`` (TLS) or
    ``redis+sentinel://[user[:password]@]host1:port1,host2:port2/<master name>[/db]`` (the
    master the sentinels name, followed across failovers; ``sentinel_user`` and
    ``sentinel_password`` are the sentinels' own AUTH). Nothing connects until the first call.

    ``watchdog_timeout``: the lease (seconds) of locks held in watchdog mode; the watchdog renews
    them every third of it while they are held. ``connect_timeout`` and ``command_timeout`` bound
    every network call. An option left out (None) takes the core's default: 30 s, 5 s, 5 s, and
    1 s for ``sync_timeout``. ``on_lost(name, reason)`` is called, on a background thread, for every
    hold lost while held; an exception it raises is logged. ``max_hold`` (seconds, default no
    cap): the watchdog stops renewing a hold that long after it was taken and reports it lost
    (reason ``max_hold``); ``client.lock(..., max_hold=)`` and ``acquire(max_hold=)`` override it.

    ``sync_replicas`` (default 0, off): after each lock write, wait up to ``sync_timeout``
    seconds (Redis ``WAIT``) until that many replicas have it. An acquire that replicas are
    connected for but none acknowledged is taken back and raises ``ReplicaSyncError``; a release
    or renewal they did not acknowledge is logged as a warning. ``sync_aof=True`` waits with
    ``WAITAOF`` instead: until the server's append-only file has the write on disk (and that many
    replicas' files, with ``sync_replicas``); an acquire not on disk in time is taken back and
    raises ``ReplicaSyncError``. It needs Redis 7.2+ or Valkey with ``appendonly yes``: on any
    other server the first call raises ``ValueError`` saying so, having written nothing.

    TLS (``rediss://`` URLs): the server's certificate is verified against the system's CAs, or
    ``tls_ca_file`` / ``tls_ca_dir``, and the URL's host (or ``tls_server_name``, also sent as
    SNI). ``tls_cert_file`` and ``tls_key_file`` give a client certificate (mutual TLS).
    ``tls_insecure_skip_verify=True`` accepts any certificate: it encrypts, but protects against
    no man in the middle; for tests only. See ``redlease.tls_supported()``.

    ``handover_grace`` (seconds, default 0.002): when a release of a non-fair lock wakes a
    waiter, a waiting acquire of the same lock by this client within that time leaves the lock
    to the woken waiter first, so that a thread that releases and re-acquires in a loop does not
    keep taking it back; 0 turns this off (the most hand-offs per second, the least even share
    between workers). Fair locks keep their strict order either way.

    ``failover_grace`` (seconds, default 1; ``redis+sentinel://``, and per slot on
    ``redis+cluster://``): after this client followed a new master it grants no new hold there for
    that long, so that a holder on the old master, whose
    hold the promoted replica may lack, is told first; 0 turns this off.

    Validity (``docs/semantics.md``, "Knowing how long you hold it"): a hold is guaranteed until
    its last confirmed acquire or renewal was sent plus its lease, less a margin of
    ``drift_factor`` (default 0.01) of the lease plus 2 ms for clocks drifting apart:
    ``lock.valid_for()``, ``lock.deadline``, ``lock.check(min_left=)``. A hold whose renewal
    failed is *in doubt* (``lock.in_doubt``) until a renewal is confirmed again or it is lost.
    ``on_state(name, state, why)`` is called on a background thread for each change: state
    ``"in_doubt"``, ``"held"`` (confirmed again) or ``"lost"`` (why: the reason, as on_lost's).

    ``client_name`` (default ``"<host>:<pid>"``): how this client's connections name
    themselves to Redis (``CLIENT SETNAME redlease:<client id>:<client_name>``), shown beside its
    holds by ``lock.owner()``, ``client.inspect()`` and ``redlease inspect``; 1 to 64 printable
    ASCII characters, no spaces.

    Close it with ``close()`` or use it as a context manager. Closing does not release held
    locks: they expire by their lease.
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", *,
                 on_lost: Optional[OnLost] = None, on_state: Optional[OnState] = None,
                 **options: "Unpack[ClientOptions]") -> None:
        if on_lost is not None and not callable(on_lost):
            raise TypeError("on_lost must be callable or None")
        if on_state is not None and not callable(on_state):
            raise TypeError("on_state must be callable or None")
        _green.check()  # under gevent's patching: owners are greenlets, waits yield to the hub
        # the options go through as they are: the core's catalogue names, converts and checks them
        self._core = _core.Client(url, on_event=EventDispatcher(on_lost, on_state), **options)
        self._url = self._core.url
        self.watchdog_timeout: float = self._core.watchdog_timeout
        _open_clients.add(self)

    def lock(self, name: Union[str, bytes], *, timeout: float = -1,
             lease: Optional[float] = None,
             max_hold: MaxHold = UNSET) -> Lock:
        """A Redisson RLock on ``name`` (str, UTF-8 encoded, or bytes).

        ``timeout`` (seconds; -1 forever, 0 one try) and ``lease`` (None: watchdog; seconds: a
        fixed lease, not renewed) apply to ``with lock:`` and to ``acquire()`` calls that leave
        them out. ``max_hold`` (seconds; None: no cap) overrides the client's cap.
        """
        return self._make(Lock, name, timeout, lease, max_hold)

    def fenced_lock(self, name: Union[str, bytes], *, timeout: float = -1,
                    lease: Optional[float] = None,
                    max_hold: MaxHold = UNSET) -> FencedLock:
        """A Redisson RFencedLock on ``name``: as ``lock()``, and every acquisition takes a
        strictly increasing fencing token (``lock.token``, ``lock.acquire_token()``)."""
        return self._make(FencedLock, name, timeout, lease, max_hold)

    def fair_lock(self, name: Union[str, bytes], *, timeout: float = -1,
                  lease: Optional[float] = None,
                  max_hold: MaxHold = UNSET) -> FairLock:
        """A Redisson RFairLock on ``name``: as ``lock()``, and waiters acquire in arrival
        order."""
        return self._make(FairLock, name, timeout, lease, max_hold)

    def rw_lock(self, name: Union[str, bytes], *, timeout: float = -1,
                lease: Optional[float] = None,
                max_hold: MaxHold = UNSET) -> ReadWriteLock:
        """A Redisson RReadWriteLock on ``name``: ``.read`` (shared) and ``.write`` (exclusive)
        are locks with the full lock API; the options apply to both."""
        return ReadWriteLock(self._make(ReadLock, name, timeout, lease, max_hold),
                             self._make(WriteLock, name, timeout, lease, max_hold))

    def semaphore(self, name: Union[str, bytes], *, timeout: float = -1) -> Semaphore:
        """A Redisson RSemaphore on ``name``: permits shared by every client, Java's too.

        ``timeout`` (seconds; -1 forever, 0 one try) applies to ``with sem:`` (one permit) and to
        ``acquire()`` calls that leave it out. Permits belong to this client: any of its threads
        may ``release()`` them; releasing more than it holds raises NotOwnedError.
        """
        return Semaphore(self._core, name, timeout=timeout)

    def permit_expirable_semaphore(self, name: Union[str, bytes]) -> PermitExpirableSemaphore:
        """A Redisson RPermitExpirableSemaphore on ``name``: permits with ids and leases, which
        come back by themselves when their lease runs out."""
        return PermitExpirableSemaphore(self._core, name)

    def count_down_latch(self, name: Union[str, bytes]) -> CountDownLatch:
        """A Redisson RCountDownLatch on ``name``: ``try_set_count(n)``, ``count_down()``,
        ``count()``, ``wait(timeout)``."""
        return CountDownLatch(self._core, name)

    def multi_lock(self, *locks: Lock, timeout: float = -1, lease: Optional[float] = None,
                   max_hold: MaxHold = UNSET) -> MultiLock:
        """The ``locks`` (any kinds, of any clients) taken as one by the calling thread, all or
        none, with Redisson's RedissonMultiLock rules: one ``timeout`` for them all, and a fixed
        ``lease`` set on each once all are taken. ``with`` releases them all."""
        if max_hold is UNSET:
            return MultiLock(locks, timeout=timeout, lease=lease)
        return MultiLock(locks, timeout=timeout, lease=lease, max_hold=max_hold)

    @overload
    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: Literal["skip"] = "skip",
               max_hold: MaxHold = UNSET,
               ) -> "Callable[[Callable[_P, R]], Callable[_P, Optional[R]]]": ...

    @overload
    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: Literal["raise"],
               max_hold: MaxHold = UNSET) -> "Callable[[Callable[_P, R]], Callable[_P, R]]": ...

    def locked(self, name: NameSpec, *, timeout: float = 0, on_busy: str = "skip",
               max_hold: MaxHold = UNSET) -> "Callable[[Callable[_P, R]], Callable[_P, Any]]":
        """A decorator: each call of the function runs holding the lock ``name`` (watchdog
        lease, released when it returns or raises), so that it runs on one caller at a time
        across every process on this Redis.

        ``name``: a str or bytes; a str with ``{fields}`` is formatted with the call's arguments
        by parameter name (``"report:{day}"``: one lock per day); or a callable given the call's
        arguments that returns the name. ``timeout`` (seconds; default 0, one try; -1 waits
        forever): how long a call waits for the lock. A call that does not get it in time is
        ``on_busy``: ``"skip"`` (default) logs it (INFO, the ``redlease`` logger) and returns
        None without running the function; ``"raise"`` raises LockTimeout. ``max_hold`` as
        ``lock()``. A hold lost while the function ran raises LockLostError when it returns.
        """
        check_name(name)
        timeout = check_timeout(timeout)
        check_on_busy(on_busy)

        def decorate(func: "Callable[_P, R]") -> "Callable[_P, Any]":
            if inspect.iscoroutinefunction(func):
                raise TypeError(f"{func.__qualname__} is a coroutine function: decorate it with "
                                "redlease.asyncio.Client.locked")
            namer = Namer(name, func)

            @functools.wraps(func)
            def run(*args: "_P.args", **kwargs: "_P.kwargs") -> Any:
                lock_name = namer(args, kwargs)
                return run_alone(self.lock(lock_name, max_hold=max_hold), timeout,
                                 lambda: busy(lock_name, func, on_busy), func, args, kwargs)
            return run
        return decorate

    def _make(self, cls: "type[L]", name: Union[str, bytes], timeout: float,
              lease: Optional[float], max_hold: MaxHold) -> "L":
        kind = KINDS.get(cls, 0)
        if max_hold is UNSET:
            return cls(self._core, name, timeout=timeout, lease=lease, _kind=kind)
        return cls(self._core, name, timeout=timeout, lease=lease, max_hold=max_hold, _kind=kind)

    @property
    def url(self) -> str:
        """The URL the client was made with, its password replaced by ``***``."""
        return self._url

    @property
    def id(self) -> str:
        """The client's UUID: owner fields in Redis read ``<id>:<thread context>``."""
        return self._core.id

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._core.closed

    def stats(self) -> Stats:
        """This client's counters, kept in the core (the Lua rock reads the same): acquisitions,
        waits with their total and longest time, holds lost by reason, holds and waiters now,
        renewal rounds and failed rounds, and the watchdog's own. See docs/operations.md."""
        return cast(Stats, self._core.stats())

    def inspect(self, name: Union[str, bytes]) -> Inspection:
        """What the key ``name`` holds, decoded from Redisson's layouts: its kind, owners (client
        id, context, count, lease, whether a client of this process holds it), the fair queue,
        readers, the last fencing token, a counter's value, subscribers. Read-only."""
        return self._core.inspect(name)

    def scan(self, pattern: Optional[str] = None, *, count: int = 1000,
             on_step: Optional[Callable[[int], None]] = None) -> Iterator[bytes]:
        """Names of lock-shaped keys (optionally matching ``pattern``), found with ``SCAN``
        (never ``KEYS``), ``count`` keys per step. ``on_step(hash keys looked at)`` after each
        step, e.g. for a progress line."""
        cursor = 0
        while True:
            cursor, names, looked_at = self._core.scan_step(cursor, pattern, count)
            yield from names
            if on_step is not None:
                on_step(looked_at)
            if cursor == 0:
                return

    def watch_wait(self, name: Union[str, bytes], timeout: float) -> bool:
        """Sleeps until the key changes (keyspace notifications) or ``timeout`` seconds; answers
        whether the server sends notifications (False: it only slept, poll). ``timeout`` 0:
        only answers, subscribing to nothing."""
        return self._core.watch_wait(name, timeout)

    def close(self) -> None:
        """Stops the watchdog and the subscriber and closes the connections. Idempotent."""
        self._core.close()
        _open_clients.discard(self)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.id
        return f"<redlease.Client {self._url!r} {state}>"
