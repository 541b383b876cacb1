"""Helpers of the interop tests: the key and channel names of docs/protocol.md, pub/sub subscriber
counts, Python threads that hold their own locks, and an on_lost recorder."""

import itertools
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, List, Tuple, Union

from testkit import wait_for

Name = Union[str, bytes]


def _b(name: Name) -> bytes:
    return name.encode() if isinstance(name, str) else name


def prefix(p: str, name: Name) -> bytes:
    """prefix(p, name) of docs/protocol.md (Redisson's RedissonObject.prefixName)."""
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

    def start(self, fn: Callable[..., Any], *args: Any,
              **kwargs: Any) -> "Future[Tuple[Any, float]]":
        def timed() -> Tuple[Any, float]:
            result = fn(*args, **kwargs)
            return result, time.monotonic()
        return self._pool.submit(timed)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.start(fn, *args, **kwargs).result(30)[0]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Listener:
    """A connection of its own that records what Redis shows it, in order: ``Listener(url,
    "PSUBSCRIBE", "*")`` records every published (channel, message); ``Listener(url,
    "MONITOR")`` every command the server runs (scripts' own calls included). ``mark(text)``
    puts a marker in the stream (through another connection) and waits until it has arrived,
    so that ``between(a, b)`` is exactly what happened between two marks."""

    MARK_CHANNEL = b"redlease-interop-mark"
    _serials = itertools.count(1)

    def __init__(self, url: str, *command: str) -> None:
        from testkit import Raw
        self._conn = Raw(url)
        self._ctl = Raw(url)
        self.monitor = command[0].upper() == "MONITOR"
        self._conn(*command)
        self._serial = next(self._serials)
        self.events: List[Any] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                item = self._conn._read()
            except Exception:
                return
            with self._lock:
                self.events.append(item)

    def mark(self, text: str) -> None:
        text = self._text(text)
        self._ctl("PUBLISH", self.MARK_CHANNEL, text)
        assert wait_for(lambda: self._index(text) >= 0, 5), f"mark {text} did not arrive"

    def _is_mark(self, item: Any, text: str) -> bool:
        if self.monitor:
            return (isinstance(item, str) and '"PUBLISH"' in item.upper()
                    and f'"{self.MARK_CHANNEL.decode()}" "{text}"' in item)
        return (isinstance(item, list) and len(item) == 4 and item[0] == b"pmessage"
                and item[2] == self.MARK_CHANNEL and item[3] == text.encode())

    def _index(self, text: str) -> int:
        with self._lock:
            for i, item in enumerate(self.events):
                if self._is_mark(item, text):
                    return i
        return -1

    def _text(self, text: str) -> str:
        return f"{self._serial}-{text}"  # each listener its own marks

    def between(self, start: str, end: str) -> List[Any]:
        a, b = self._index(self._text(start)), self._index(self._text(end))
        assert 0 <= a < b
        with self._lock:
            return self.events[a + 1:b]

    def close(self) -> None:
        self._conn.close()
        self._ctl.close()
