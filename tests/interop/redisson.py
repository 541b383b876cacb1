"""The Redisson side of the interop suite: a real Redisson client in a Java process (the driver
of tests/interop/java, built by `make interop-java` into build/interop), driven from Python.

    java = Redisson(server.url, watchdog_ms=1000)
    lock = java.lock("orders:42")            # getLock; kind="fair", "fenced", "read", "write"
    lock.lock("t1", lease_ms=20000)          # on Java thread t1: waits for the reply
    pending = lock.start("t2", "lock")       # a Future: t2 blocks in lock() meanwhile
    lock.try_lock("t3", 0)                   # -> False
    lock.unlock("t1")
    pending.result(10); pending.received     # when the reply was read (time.monotonic())
    java.close()

Each thread name is a real Java thread (a single-thread executor in the driver), so Redisson's
per-thread ownership holds: t1's holds are t1's. Calls that Java answers with an exception raise
JavaError (its ``cls`` is the Java class name). See Driver.java for the line protocol.
"""

import abc
import itertools
import os
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future
from typing import Any, Dict, Optional, Sequence, Union

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JAR = os.environ.get("REDLEASE_INTEROP_JAR",
                     os.path.join(ROOT, "build", "interop", "redlease-interop.jar"))
# A small, quick-starting JVM: the driver does little work and must start fast.
JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx256m"]

Name = Union[str, bytes]


def name_bytes(name: Name) -> bytes:
    return name.encode() if isinstance(name, str) else name


class JavaError(Exception):
    """Java threw: ``cls`` is the exception's class name, ``message`` its message."""

    def __init__(self, cls: str, message: str) -> None:
        super().__init__(f"{cls}: {message}")
        self.cls = cls
        self.message = message

    @property
    def simple_name(self) -> str:
        return self.cls.rsplit(".", 1)[-1]


class PeerDied(Exception):
    """The peer process ended (or never answered) while a request was pending."""


class LineProcess(abc.ABC):
    """A child process that answers requests line by line on stdout. A reader thread resolves
    futures; each resolved future gets ``received``, the time.monotonic() its line was read."""

    def __init__(self, argv, *, env=None, cwd=None, start_timeout: float = 60.0) -> None:
        self._stderr = tempfile.TemporaryFile()
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=env, cwd=cwd, bufsize=0)
        self._lock = threading.Lock()
        self._ready: Future = Future()
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True,
                                        name=f"reader-{os.path.basename(argv[0])}")
        self._reader.start()
        try:
            first = self._ready.result(start_timeout)
        except BaseException:
            self.kill()
            raise
        if not first.startswith("ready "):
            self.kill()
            raise PeerDied(f"{argv!r} did not start: {first}\n{self.stderr()}")
        self.ready_value = first[len("ready "):]

    @abc.abstractmethod
    def _dispatch(self, line: str, received: float) -> None:
        """Matches a reply line to its pending future."""

    @abc.abstractmethod
    def _fail_pending(self, error: Exception) -> None:
        """Fails every pending future (the peer died or was closed)."""

    def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        for raw in stdout:
            received = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not self._ready.done():
                self._ready.set_result(line)
                continue
            self._dispatch(line, received)
        if not self._ready.done():
            self._ready.set_result("(no output)")
        self._fail_pending(PeerDied(f"{self.argv[0]} exited (status {self.proc.wait()}):\n"
                                    f"{self.stderr()}"))

    def _send(self, line: str) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise PeerDied(f"{self.argv[0]} is gone: {e}\n{self.stderr()}") from e

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._reader.join(5)

    def _close(self, goodbye: str, timeout: float) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._send(goodbye)
            self.proc.stdin.close()
            self.proc.wait(timeout)
        except (PeerDied, OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self._stderr.close()


class Redisson(LineProcess):
    """The Java driver: one RedissonClient on ``url`` (``redis://host:port[/db]``).

    ``watchdog_ms``: Config.setLockWatchdogTimeout (default Redisson's 30000).
    """

    def __init__(self, url: str, *, watchdog_ms: Optional[int] = None,
                 timeout_ms: Optional[int] = None, also: Sequence[str] = (),
                 start_timeout: float = 60.0) -> None:
        if not os.path.exists(JAR):
            raise FileNotFoundError(f"{JAR} is missing: run `make interop-java`")
        argv = ["java", *JVM_FLAGS, "-jar", JAR, url]
        if watchdog_ms is not None:
            argv += ["--watchdog-ms", str(int(watchdog_ms))]
        if timeout_ms is not None:
            argv += ["--timeout-ms", str(int(timeout_ms))]
        for other in also:  # more RedissonClients, for RedissonRedLock (kind "red")
            argv += ["--also", other]
        self._ids = itertools.count(1)
        self._pending: Dict[str, Future] = {}
        self._scope = "s0"
        self._scopes = itertools.count(1)
        self._dead: Optional[Exception] = None
        super().__init__(argv, start_timeout=start_timeout)
        self.id = self.ready_value  # RedissonClient.getId(): the first part of its owner fields

    def new_scope(self) -> None:
        """Later thread names map to new Java threads (so that a test never inherits a thread
        that an earlier test left blocked)."""
        self._scope = f"s{next(self._scopes)}"

    def _dispatch(self, line: str, received: float) -> None:
        rid, _, rest = line.partition(" ")
        with self._lock:
            future = self._pending.pop(rid, None)
        if future is None:
            return  # not ours (cannot happen with a sane driver); ignore
        future.received = received
        status, _, value = rest.partition(" ")
        if status == "ok":
            future.set_result(_parse_value(value))
        elif status == "err":
            cls, _, message = value.partition(" ")
            future.set_exception(JavaError(cls, message))
        else:
            future.set_exception(PeerDied(f"bad reply line {line!r}"))

    def _fail_pending(self, error: Exception) -> None:
        with self._lock:
            self._dead = error
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error)

    def start(self, thread: Optional[str], op: str, kind: str = "-",
              name: Optional[Name] = None, *args: Union[int, str]) -> Future:
        """Sends one request; the Future resolves with the reply (``.sent`` and ``.received``
        are time.monotonic() stamps). ``thread=None``: a driver op not bound to a thread."""
        rid = str(next(self._ids))
        java_thread = "-" if thread is None else f"{self._scope}.{thread}"
        hexname = "-" if name is None else name_bytes(name).hex()
        future: Future = Future()
        with self._lock:
            if self._dead is not None:
                raise self._dead
            self._pending[rid] = future
        line = " ".join([rid, java_thread, op, kind, hexname,
                         *(a if isinstance(a, str) else str(int(a)) for a in args)])
        future.sent = time.monotonic()
        self._send(line)
        return future

    def call(self, thread: Optional[str], op: str, kind: str = "-", name: Optional[Name] = None,
             *args: Union[int, str], timeout: float = 30.0) -> Any:
        return self.start(thread, op, kind, name, *args).result(timeout)

    def lock(self, name: Name, kind: str = "lock") -> "JavaLock":
        return JavaLock(self, kind, name)

    def object(self, kind: str, name: Name) -> "JavaLock":
        """Another Redisson object of the driver (``semaphore``, ``pes``, ``latch``, ``multi``
        over comma-separated names, ``red``), used through ``call(thread, op, *args)`` with the
        ops Driver.java lists."""
        return JavaLock(self, kind, name)

    def thread_id(self, thread: str) -> int:
        """The Java thread's Thread.getId()."""
        return self.call(thread, "threadId")

    def owner(self, thread: str) -> bytes:
        """The hash field Redisson writes for holds of this Java thread: ``<client id>:<tid>``."""
        return f"{self.id}:{self.thread_id(thread)}".encode()

    def close(self) -> None:
        self._close("0 - exit - -", timeout=10)


def _parse_value(text: str) -> Any:
    if text == "" or text == "null":
        return None
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith("id:"):  # a permit id
        return text[3:]
    try:
        return int(text)
    except ValueError:
        return text


class JavaLock:
    """One Redisson lock object (getLock(name), or the kind given) used from named Java threads.

    Every method takes the Java thread first; ``start(thread, op, *args)`` sends any op and
    returns the Future instead of waiting.
    """

    def __init__(self, driver: Redisson, kind: str, name: Name) -> None:
        self.driver = driver
        self.kind = kind
        self.name = name

    def start(self, thread: str, op: str, *args: Union[int, str, None]) -> Future:
        return self.driver.start(thread, op, self.kind, self.name,
                                 *(a for a in args if a is not None))

    def call(self, thread: str, op: str, *args: Union[int, str, None],
             timeout: float = 30.0) -> Any:
        return self.start(thread, op, *args).result(timeout)

    def lock(self, thread: str, lease_ms: Optional[int] = None, timeout: float = 30.0) -> None:
        return self.call(thread, "lock", lease_ms, timeout=timeout)

    def try_lock(self, thread: str, wait_ms: Optional[int] = None,
                 lease_ms: Optional[int] = None, timeout: float = 30.0) -> bool:
        if wait_ms is None and lease_ms is not None:
            raise ValueError("tryLock with a lease needs a wait time")
        return self.call(thread, "tryLock", wait_ms, lease_ms, timeout=timeout)

    def unlock(self, thread: str) -> None:
        return self.call(thread, "unlock")

    def force_unlock(self, thread: str) -> bool:
        return self.call(thread, "forceUnlock")

    def is_locked(self, thread: str) -> bool:
        return self.call(thread, "isLocked")

    def is_held_by_current_thread(self, thread: str) -> bool:
        return self.call(thread, "isHeldByCurrentThread")

    def get_hold_count(self, thread: str) -> int:
        return self.call(thread, "getHoldCount")

    def remain_time_to_live(self, thread: str) -> int:
        return self.call(thread, "remainTimeToLive")

    def lock_and_get_token(self, thread: str, lease_ms: Optional[int] = None) -> int:
        return self.call(thread, "lockAndGetToken", lease_ms)

    def try_lock_and_get_token(self, thread: str, wait_ms: Optional[int] = None,
                               lease_ms: Optional[int] = None) -> Optional[int]:
        return self.call(thread, "tryLockAndGetToken", wait_ms, lease_ms)

    def get_token(self, thread: str) -> Optional[int]:
        return self.call(thread, "getToken")
