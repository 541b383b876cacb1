"""Helpers of the interop tests: the key and channel names of PROTOCOL.md, pub/sub subscriber
counts, Python threads that hold their own locks, and an on_lost recorder."""

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, List, Tuple, Union

from testkit import wait_for

Name = Union[str, bytes]


def _b(name: Name) -> bytes:
    return name.encode() if isinstance(name, str) else name


def prefix(p: str, name: Name) -> bytes:
    """prefix(p, name) of PROTOCOL.md (Redisson's RedissonObject.prefixName)."""
    n = _b(name)
    return p.encode() + (b":" + n if b"{" in n else b":{" + n + b"}")


def channel(name: Name) -> bytes:
    """The unlock channel of a reentrant lock."""
    return prefix("redisson_lock__channel", name)


def subscribers(raw, name: Name) -> int:
    """Connections subscribed to the lock's unlock channel (every waiting client has one)."""
    reply = raw("PUBSUB", "NUMSUB", channel(name))
    return int(reply[1])


def wait_subscribed(raw, name: Name, count: int, timeout: float = 10.0) -> None:
    assert wait_for(lambda: subscribers(raw, name) >= count, timeout), (
        f"{count} subscriber(s) expected on {channel(name)!r}, have {subscribers(raw, name)}")


class PyThread:
    """One Python thread running calls in order, so that its holds stay its own (redlease's
    owner is the OS thread). ``start`` returns a Future of (result, time.monotonic() at the end)."""

    def __init__(self, name: str = "py") -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)

    def start(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "Future[Tuple[Any, float]]":
        def timed() -> Tuple[Any, float]:
            result = fn(*args, **kwargs)
            return result, time.monotonic()
        return self._pool.submit(timed)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.start(fn, *args, **kwargs).result(30)[0]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class LostRecorder:
    """on_lost callback that remembers (name, reason, time.monotonic())."""

    def __init__(self) -> None:
        self.calls: List[Tuple[Any, str, float]] = []
        self.event = threading.Event()

    def __call__(self, name: Any, reason: str) -> None:
        self.calls.append((name, reason, time.monotonic()))
        self.event.set()
