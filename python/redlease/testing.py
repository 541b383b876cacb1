"""A throwaway redis-server for tests: ``RedisServer`` and the ``redlease_server`` pytest fixture.

    from redlease.testing import RedisServer

    with RedisServer() as server:
        client = redlease.Client(server.url)

The server listens on a free loopback port, keeps nothing on disk, and is stopped (and its
process reaped) on exit. The pytest plugin (registered through the ``pytest11`` entry point)
provides ``redlease_server``, one server per test.

``RedisCluster`` starts a throwaway Redis Cluster the same way: masters and replicas, each a
redis-server with ``--cluster-enabled yes`` on a free port, joined by ``redis-cli --cluster
create``; ``url`` is its ``redis+cluster://`` URL (``scripts/redis-cluster`` runs one by hand).
"""

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import List, Optional

__all__ = ["RedisServer", "RedisCluster", "redlease_server"]


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
        """The server's URL, database 0 on its loopback port."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        """Starts the server (on a free loopback port unless one was given) and waits until it
        answers; returns itself."""
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
        """Stops the server (its directory stays until close())."""
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


class RedisCluster:
    """A Redis Cluster on 127.0.0.1: ``masters`` masters with ``replicas`` replicas each, every
    node a ``RedisServer`` (``nodes``), stopped and removed by ``close()``. Nodes time out after
    ``node_timeout_ms`` (a replica takes over a master that stopped answering about twice that
    later); slots stay served while another shard is down (full coverage not required).
    """

    def __init__(self, masters: int = 3, replicas: int = 1, node_timeout_ms: int = 1000,
                 start_timeout: float = 60.0) -> None:
        self.masters_wanted, self.replicas_wanted = masters, replicas
        self.node_timeout_ms = node_timeout_ms
        self.start_timeout = start_timeout
        self.nodes: List[RedisServer] = []

    @property
    def url(self) -> str:
        """A redis+cluster:// URL naming the masters as seeds."""
        seeds = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes[:self.masters_wanted])
        return f"redis+cluster://{seeds}"

    def node_args(self) -> List[str]:
        """redis-server's arguments for a node of this cluster."""
        return ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-require-full-coverage", "no", "--enable-debug-command", "yes"]

    def create(self, addresses: List[str]) -> None:
        """Joins the started nodes (``host:port`` each) into the cluster and waits until it is
        healthy."""
        subprocess.run(["redis-cli", "--cluster", "create", *addresses,
                        "--cluster-replicas", str(self.replicas_wanted), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=self.start_timeout)
        self.wait_ok(self.start_timeout)

    def start(self) -> "RedisCluster":
        """Starts the nodes, creates the cluster and waits until it is ready; returns itself."""
        try:
            for _ in range(self.masters_wanted * (1 + self.replicas_wanted)):
                self.nodes.append(RedisServer(extra_args=self.node_args()).start())
            self.create([f"127.0.0.1:{n.port}" for n in self.nodes])
        except BaseException:
            self.close()
            raise
        return self

    def cli(self, port: int, *args: str) -> str:
        """redis-cli's answer to one command at the node on `port` (an error: empty)."""
        done = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                              text=True, timeout=10)
        return done.stdout.strip()

    def _node_ok(self, node: RedisServer) -> bool:
        info = self.cli(node.port, "CLUSTER", "INFO")
        if "cluster_state:ok" not in info:
            return False
        known = self.cli(node.port, "CLUSTER", "NODES").splitlines()
        return len(known) == len(self.nodes) and not any("fail" in line.split()[2]
                                                         for line in known)

    def wait_ok(self, timeout: float = 60.0) -> None:
        """Waits until every running node sees the whole cluster healthy and replicas synced."""
        deadline = time.monotonic() + timeout
        unhealthy: List[int] = []
        while time.monotonic() < deadline:
            running = [n for n in self.nodes if n.process is not None]
            masters = self.masters()
            unhealthy = [n.port for n in running if not self._node_ok(n) or (
                n not in masters
                and "master_link_status:up" not in self.cli(n.port, "INFO", "replication"))]
            if not unhealthy:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the cluster did not become healthy (nodes on ports {unhealthy})")

    def masters(self) -> List[RedisServer]:
        """The running nodes that are masters now."""
        return [n for n in self.nodes if n.process is not None
                and self.cli(n.port, "ROLE").splitlines()[:1] == ["master"]]

    def node_of_slot(self, slot: int) -> RedisServer:
        """The master that serves `slot`, as the running nodes' CLUSTER SLOTS say."""
        for n in self.nodes:
            if n.process is None:
                continue
            port = self._owner_in_nodes(n, slot)
            if port:
                return next(m for m in self.nodes if m.port == port)
        raise RuntimeError(f"no node serves slot {slot}")

    def _owner_in_nodes(self, node: RedisServer, slot: int) -> int:
        for line in self.cli(node.port, "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for part in fields[8:]:
                if part.startswith("["):
                    continue
                low, _, high = part.partition("-")
                if int(low) <= slot <= int(high or low):
                    return int(fields[1].split(":")[1].split("@")[0])
        return 0

    def keyslot(self, key: str) -> int:
        """The hash slot of key, as the cluster computes it."""
        return int(self.cli(self.nodes[0].port, "CLUSTER", "KEYSLOT", key))

    def close(self) -> None:
        """Stops every node and removes their directories."""
        for n in self.nodes:
            n.close()
        self.nodes = []

    def __enter__(self) -> "RedisCluster":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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

