"""Shared by the pytest suites: a minimal Redis client (to inspect what redlease wrote,
independently of redlease), a polling helper and an on_lost recorder."""

import socket
import threading
import time
from typing import Any, List, Union

Arg = Union[str, bytes, int, float]


class RespError(Exception):
    pass


class Raw:
    def __init__(self, url: str) -> None:
        host_port = url.split("//", 1)[1].split("/", 1)[0]
        host, port = host_port.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def __call__(self, *args: Arg) -> Any:
        parts: List[bytes] = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(parts))
        return self._read()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _read(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RespError(f"unexpected reply {line!r}")


def wait_for(predicate, timeout=5.0):
    """Polls predicate every 20 ms for up to `timeout` seconds; returns its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class LostRecorder:
    """An on_lost callback that remembers (name, reason, time.monotonic()) and lets a test wait
    for the first call."""

    def __init__(self) -> None:
        self.calls: List[Any] = []
        self.event = threading.Event()

    def __call__(self, name: Any, reason: str) -> None:
        self.calls.append((name, reason, time.monotonic()))
        self.event.set()

    def wait(self, timeout: float) -> bool:
        return self.event.wait(timeout)
