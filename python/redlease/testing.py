"""A throwaway redis-server for tests: ``RedisServer`` and the ``redlease_server`` pytest fixture.

    from redlease.testing import RedisServer

    with RedisServer() as server:
        client = redlease.Client(server.url)

The server listens on a free loopback port, keeps nothing on disk, and is stopped (and its
process reaped) on exit. The pytest plugin (registered through the ``pytest11`` entry point)
provides ``redlease_server``, one server per test.
"""

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import List, Optional

__all__ = ["RedisServer", "redlease_server"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """A redis-server process on 127.0.0.1 and a free port, for one test or one test session.

    ``url`` is ``redis://127.0.0.1:<port>/0``; ``extra_args`` go to redis-server's command line.
    ``stop()`` kills it; ``start()`` starts it again on the same port with no data.
    """

    def __init__(self, executable: str = "redis-server", extra_args: Optional[List[str]] = None,
                 start_timeout: float = 10.0) -> None:
        found = shutil.which(executable)
        if not found:
            raise FileNotFoundError(f"{executable} not found on PATH (Debian: apt-get install "
                                    "redis-server)")
        self.executable = found
        self.extra_args = list(extra_args or [])
        self.start_timeout = start_timeout
        self.port = 0
        self.process: Optional[subprocess.Popen[bytes]] = None
        self._dir: Optional[str] = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        if self.process is not None:
            return self
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="redlease-redis-")
        for _ in range(5):  # a free port can be taken between probing and binding
            port = self.port or _free_port()
            process = subprocess.Popen(
                [self.executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self._dir, "--daemonize", "no",
                 *self.extra_args],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready(port, process):
                self.port, self.process = port, process
                return self
            process.kill()
            process.wait()
            if self.port:  # restarting on a fixed port: retry the same one
                time.sleep(0.1)
        raise RuntimeError(f"redis-server did not start (last port tried: {port})")

    def _wait_ready(self, port: int, process: subprocess.Popen[bytes]) -> bool:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # up, maybe with a password
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.kill()
        self.process.wait()
        self.process = None

    def close(self) -> None:
        """Stops the server and removes its directory."""
        self.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        process = getattr(self, "process", None)
        if process is not None:
            process.kill()


try:
    import pytest
except ImportError:  # pytest is optional: RedisServer works without it
    pass
else:
    @pytest.fixture
    def redlease_server() -> Iterator[RedisServer]:
        """A throwaway redis-server for one test (``.url``, ``.stop()``, ``.start()``)."""
        with RedisServer() as server:
            yield server

