"""A redlease Lua client in a lua5.4 process (tests/interop/lua_peer.lua), driven from Python.

    peer = LuaPeer(server.url, watchdog_timeout=30)
    peer.acquire("orders:42", timeout=0)      # -> True, or raises LuaFailure("timeout: ...")
    waiting = peer.start("acquire", "orders:42")   # a Future; the peer blocks meanwhile
    waiting.result(10); waiting.received      # time.monotonic() when its answer was read
    peer.release("orders:42")
    peer.close()

The Lua side is single-threaded: requests are answered in order, and everything it holds
belongs to its main coroutine. It uses the rock tree that `make lua-rocks` builds.
"""

import collections
import os
import time
from concurrent.futures import Future
from typing import Any, Deque, Optional

from redisson import ROOT, LineProcess, Name, PeerDied, name_bytes

LUA = "lua5.4"
TREE = os.path.join(ROOT, "build", "lua-lua5.4")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lua_peer.lua")


class LuaFailure(Exception):
    """The Lua call answered nil, err: ``code`` is the error's first word (timeout,
    not_owned...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = message.split(":", 1)[0].split(" ", 1)[0]


def lua_env() -> dict:
    if not os.path.exists(os.path.join(TREE, ".built")):
        raise FileNotFoundError(f"{TREE} is missing: run `make lua-rocks`")
    ver = "5.4"
    env = dict(os.environ)
    env["LUA_PATH"] = (f"{TREE}/share/lua/{ver}/?.lua;{TREE}/share/lua/{ver}/?/init.lua;;")
    env["LUA_CPATH"] = f"{TREE}/lib/lua/{ver}/?.so;;"
    return env


class LuaPeer(LineProcess):
    def __init__(self, url: str, *, watchdog_timeout: Optional[float] = None) -> None:
        argv = [LUA, SCRIPT, url]
        if watchdog_timeout is not None:
            argv.append(repr(float(watchdog_timeout)))
        self._queue: Deque[Future] = collections.deque()
        self._dead: Optional[Exception] = None
        super().__init__(argv, env=lua_env(), start_timeout=20)
        self.id = self.ready_value  # the Lua client's UUID

    def _dispatch(self, line: str, received: float) -> None:
        with self._lock:
            future = self._queue.popleft() if self._queue else None
        if future is None:
            return
        future.received = received
        status, _, value = line.partition(" ")
        if status == "ok":
            future.set_result(_parse(value))
        elif status == "fail":
            future.set_exception(LuaFailure(value))
        else:
            future.set_exception(PeerDied(f"bad answer {line!r}"))

    def _fail_pending(self, error: Exception) -> None:
        with self._lock:
            self._dead = error
            pending, self._queue = list(self._queue), collections.deque()
        for future in pending:
            if not future.done():
                future.set_exception(error)

    def start(self, command: str, name: Name, *words: Optional[float]) -> Future:
        """Sends one command (see lua_peer.lua); None arguments are sent as `-` (nil)."""
        line = " ".join([command, name_bytes(name).hex(),
                         *("-" if w is None else repr(float(w)) for w in words)])
        future: Future = Future()
        with self._lock:
            if self._dead is not None:
                raise self._dead
            self._queue.append(future)
            future.sent = time.monotonic()
            self._send(line)  # under the lock: the queue order is the order sent
        return future

    def call(self, command: str, name: Name, *words: Optional[float],
             timeout: float = 30.0) -> Any:
        return self.start(command, name, *words).result(timeout)

    def acquire(self, name: Name, timeout: Optional[float] = None,
                lease: Optional[float] = None, wait: float = 30.0) -> bool:
        """lock:acquire{timeout=, lease=}: True, or LuaFailure (e.g. code "timeout")."""
        return self.call("acquire", name, timeout, lease, timeout=wait)

    def release(self, name: Name) -> bool:
        return self.call("release", name)

    def close(self) -> None:
        self._close("quit", timeout=10)


def _parse(text: str) -> Any:
    values = [_value(w) for w in text.split(" ")] if text else []
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _value(word: str) -> Any:
    if word == "true":
        return True
    if word == "false":
        return False
    if word == "none":
        return None
    try:
        return float(word) if any(c in word for c in ".en") else int(word)
    except ValueError:
        return word

