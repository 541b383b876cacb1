"""The servers of a run: the Redis nodes of its topology (one, Sentinel, Cluster), each bound to
a node address of its own (see README.md), and a throwaway PostgreSQL. All are children of the
run (procs.Run)."""

import binascii
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from procs import Run

from redlease.testing import RedisCluster


def free_port(address: str, below: int = 65536) -> int:
    """A free port on `address` under `below` (a Cluster node also listens on port + 10000)."""
    while True:
        with socket.socket() as s:
            s.bind((address, 0))
            port = s.getsockname()[1]
        if port < below:
            return port


def wait_port(address: str, port: int, p: subprocess.Popen, timeout: float, probe: bytes = b"",
              want: bytes = b"") -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            return False
        try:
            with socket.create_connection((address, port), timeout=0.5) as s:
                if not probe:
                    return True
                s.sendall(probe)
                if s.recv(64).startswith(want):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


class Redis:
    """redis-server on `address`, started by the run. `sentinel_for` (a master's (address,
    port)) makes it a sentinel monitoring that master instead."""

    def __init__(self, run: Run, address: str, args: Sequence[str] = (),
                 sentinel_for: Optional[Tuple[str, int]] = None,
                 env: Optional[Dict[str, str]] = None, executable: str = "redis-server") -> None:
        self.run, self.address, self.sentinel_for = run, address, sentinel_for
        self.executable = executable
        self.dir = os.path.join(run.dir, f"redis-{address}")
        os.makedirs(self.dir)
        self.port = 0
        self.process: Optional[subprocess.Popen] = None
        self.env = env
        below = 55536 if "--cluster-enabled" in args else 65536
        for _ in range(5):
            if self.start(free_port(address, below), args):
                return
        raise RuntimeError(f"redis-server did not start on {address}")

    def start(self, port: int, args: Sequence[str] = ()) -> bool:
        """Starts it on `port` with no data; True once it answers PING."""
        common = ["--port", str(port), "--bind", self.address, "--bind-source-addr", self.address,
                  "--dir", self.dir,
                  # it binds loopback addresses only; protected mode would refuse every peer
                  # but 127.0.0.1 (a replica or sentinel connecting from its own address)
                  "--protected-mode", "no",
                  "--daemonize", "no", "--logfile", os.path.join(self.dir, "log")]
        if self.sentinel_for:
            conf = os.path.join(self.dir, "sentinel.conf")
            host, mport = self.sentinel_for
            with open(conf, "w") as f:
                f.write(f"sentinel monitor {MASTER} {host} {mport} 2\n"
                        f"sentinel down-after-milliseconds {MASTER} 1000\n"
                        f"sentinel failover-timeout {MASTER} 4000\n"
                        f"sentinel parallel-syncs {MASTER} 1\n")
            argv = [self.executable, conf, "--sentinel", *common]
        else:
            argv = [self.executable, *common, "--save", "", "--appendonly", "no",
                    "--enable-debug-command", "yes", "--busy-reply-threshold", "100", *args]
        env = {**os.environ, **self.env} if self.env else None
        self.process = self.run.spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env)
        if wait_port(self.address, port, self.process, 10, b"PING\r\n", b"+PONG"):
            self.port = port
            return True
        self.run.stop(self.process)
        self.process = None
        return False

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def call(self, *args: str, timeout: float = 2.0) -> bytes:
        """One command on a connection of its own; the raw reply."""
        with socket.create_connection((self.address, self.port), timeout=timeout) as s:
            s.sendall(b"*%d\r\n" % len(args) + b"".join(
                b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
            return s.recv(65536)

    def url(self) -> str:
        return f"redis://{self.address}:{self.port}/0"


MASTER = "mymaster"


class OneRedis:
    """Topology "one-redis": one redis-server at the first node address. With `clock`, its
    clock can jump (JumpingClock); with `relay` (an address), clients reach it through a
    delaying relay there (Relay)."""

    name = "one-redis"

    def __init__(self, run: Run, address: str, clock: bool = False,
                 relay: Optional[str] = None) -> None:
        self.clock = JumpingClock(run.dir) if clock else None
        if self.clock:
            self.redis = Redis(run, address, env=self.clock.env,
                               executable=self.clock.executable)
        else:
            self.redis = Redis(run, address)
        self.relay = Relay(run, relay, self.redis) if relay else None
        self.url = self.relay.url() if self.relay else self.redis.url()
        # what a client partition cuts
        self.addresses = [address] + ([self.relay.address] if self.relay else [])

    def master(self) -> Redis:
        return self.redis

    def data_nodes(self) -> List[Redis]:
        return [self.redis]

    def settle(self, timeout: float) -> bool:
        return True


class Relay:
    """relay.py at `address`, in front of `to`: every byte in either direction delayed by what
    delay() last set (this kernel has no netem qdisc)."""

    def __init__(self, run: Run, address: str, to: Redis) -> None:
        self.address = address
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.py")
        for _ in range(5):
            self.port = free_port(address)
            self.process = run.spawn([sys.executable, script, address, str(self.port),
                                      to.address, str(to.port)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
            if self.process.stdout and self.process.stdout.readline().strip() == "ready":
                return
            run.stop(self.process)
        raise RuntimeError(f"the relay did not start on {address}")

    def delay(self, seconds: float) -> None:
        """From now on every chunk is written `seconds` after it was read (one way)."""
        assert self.process.stdin
        self.process.stdin.write(f"{seconds}\n")
        self.process.stdin.flush()

    def url(self) -> str:
        return f"redis://{self.address}:{self.port}/0"


class JumpingClock:
    """A redis-server whose wall and monotonic clocks can jump: libfaketime preloaded, reading
    its offset from a file at every call (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE). Debian's
    redis-server is built with jemalloc, which libfaketime cannot preload beside (its start
    recurses into clock_gettime and fails); Valkey 8.1.8 (scripts/fetch-servers valkey8) is
    built with libc's malloc, and keeps Redis's expiry: by the wall clock."""

    def __init__(self, run_dir: str) -> None:
        found = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
        if not found:
            raise FileNotFoundError("libfaketime not found (Debian: apt-get install libfaketime)")
        self.file = os.path.join(run_dir, "faketime")
        self.offset = 0.0
        self._write()
        self.env = {"LD_PRELOAD": found[0], "FAKETIME_TIMESTAMP_FILE": self.file,
                    "FAKETIME_NO_CACHE": "1"}
        fetch = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                             "fetch-servers")
        bindir = subprocess.run([fetch, "valkey8"], check=True, capture_output=True,
                                text=True).stdout.strip()
        self.executable = os.path.join(bindir, "redis-server")

    def jump(self, seconds: float) -> None:
        """The server's clocks jump forward by `seconds` now, and stay there."""
        self.offset += seconds
        self._write()

    def _write(self) -> None:
        tmp = self.file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"+{self.offset:.3f}s\n")
        os.replace(tmp, self.file)  # read whole at every call: never half-written


class Sentinels:
    """Topology "sentinel": a master, a replica and three sentinels, each at its own address
    (redis-server connects from its first bind address, so each node's traffic carries its own
    address); a failover after 1 s without the master."""

    name = "sentinel"

    def __init__(self, run: Run, addresses: List[str]) -> None:
        first = Redis(run, addresses[0])
        self.nodes = [first, Redis(run, addresses[1], ["--replicaof", first.address,
                                                        str(first.port)])]
        self.sentinels = [Redis(run, a, sentinel_for=(first.address, first.port))
                          for a in addresses[2:5]]
        self.addresses = [n.address for n in self.nodes + self.sentinels]
        self.url = ("redis+sentinel://" + ",".join(f"{s.address}:{s.port}"
                                                   for s in self.sentinels) + f"/{MASTER}/0")
        if not self.settle(30):
            raise RuntimeError("the sentinel deployment did not settle")

    def master(self) -> Redis:
        """The node the sentinels' majority names master now (the first node if they cannot
        be asked)."""
        votes: Dict[str, int] = {}
        for s in self.sentinels:
            try:
                reply = s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER, timeout=0.5)
            except OSError:
                continue
            for n in self.nodes:
                if n.address.encode() in reply and str(n.port).encode() in reply:
                    votes[n.address] = votes.get(n.address, 0) + 1
        best = max(votes, key=lambda a: votes[a]) if votes else self.nodes[0].address
        return next(n for n in self.nodes if n.address == best)

    def data_nodes(self) -> List[Redis]:
        return self.nodes

    def restart(self, node: Redis) -> None:
        """A killed node back on its address and port, with no data, as a replica of the master
        (as a repaired node rejoins)."""
        m = self.master()
        for _ in range(50):
            if node.start(node.port, ["--replicaof", m.address, str(m.port)]):
                return
            time.sleep(0.2)
        raise RuntimeError(f"redis-server did not restart on {node.address}")

    def settle(self, timeout: float) -> bool:
        """Until every node runs, the sentinels agree on a master and the replica is online."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.master()
                info = m.call("INFO", "replication", timeout=0.5)
                agreed = {s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER, timeout=0.5)
                          for s in self.sentinels}
                if (all(n.process for n in self.nodes) and len(agreed) == 1
                        and b"role:master" in info and b"state=online" in info):
                    return True
            except OSError:
                pass
            time.sleep(0.2)
        return False


class Cluster(RedisCluster):
    """Topology "cluster": three masters with a replica each (redlease.testing.RedisCluster's
    layout and health checks), every node a redis-server of the run at an address of its own.
    `node_timeout_ms`: how long a master may be unreachable before its replica takes over (a
    case without failover sets it well past its longest pause)."""

    name = "cluster"

    def __init__(self, run: Run, addresses: List[str], node_timeout_ms: int) -> None:
        super().__init__(masters=3, replicas=1, node_timeout_ms=node_timeout_ms)
        for a in addresses:
            node = Redis(run, a, self.node_args())
            while any(n.port == node.port for n in self.nodes):  # cli() finds nodes by port
                node.kill()
                node.start(free_port(a, 55536), self.node_args())
            self.nodes.append(node)  # type: ignore[arg-type]
        self.create([f"{n.address}:{n.port}" for n in self.nodes])  # type: ignore[attr-defined]
        self.addresses = [n.address for n in self.nodes]  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{n.address}:{n.port}"  # type: ignore
                                             for n in self.nodes[:3])

    def cli(self, port: int, *args: str) -> str:
        node = next(n for n in self.nodes if n.port == port)
        done = subprocess.run(["redis-cli", "-h", node.address, "-p", str(port),  # type: ignore
                               *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip()

    def keyslot(self, key: str) -> int:
        """The key's slot, computed here (CRC16/XMODEM of the hash tag or the key): a node
        may be down."""
        start = key.find("{")
        end = key.find("}", start + 1) if start >= 0 else -1
        tag = key[start + 1:end] if end > start + 1 else key
        return binascii.crc_hqx(tag.encode(), 0) % 16384

    def master_for(self, lock: str) -> Redis:
        return self.node_of_slot(self.keyslot(lock))  # type: ignore[return-value]

    def master(self) -> Redis:
        return self.masters()[0]  # type: ignore[return-value]

    def data_nodes(self) -> List[Redis]:
        return list(self.nodes)  # type: ignore[arg-type]

    def restart(self, node: Redis) -> None:
        """A killed node back on its address and port with its nodes.conf and no data: it
        rejoins as a replica of the master that replaced it."""
        for _ in range(50):
            if node.start(node.port, self.node_args()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"redis-server did not restart on {node.address}")

    def settle(self, timeout: float) -> bool:
        """Until every node sees the whole cluster healthy and every replica is in sync."""
        try:
            self.wait_ok(timeout)
            return True
        except (RuntimeError, subprocess.TimeoutExpired):
            return False


class Postgres:
    """A PostgreSQL cluster of the run's own: initdb in the run's directory, `postgres` started
    as the postgres user (it refuses root) on `address` and a free port, its socket in the run's
    directory; a child of the run, stopped by pid."""

    def __init__(self, run: Run, address: str) -> None:
        user = pwd.getpwnam("postgres")
        bindir = _pg_bindir()
        self.run, self.address = run, address
        self.dir = os.path.join(run.dir, "pg")
        data = os.path.join(self.dir, "data")
        os.makedirs(self.dir)
        os.chown(self.dir, user.pw_uid, user.pw_gid)
        subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "-A",
                        "trust", "--no-sync", "-E", "UTF8"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=_as(user.pw_uid, user.pw_gid))
        for _ in range(5):
            self.port = free_port(address)
            self.process = run.spawn(
                [os.path.join(bindir, "postgres"), "-D", data, "-p", str(self.port),
                 "-c", f"listen_addresses={address}", "-c", f"unix_socket_directories={self.dir}",
                 "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                 "-c", "max_connections=100", "-c", "shared_buffers=16MB"],
                uid=user.pw_uid, gid=user.pw_gid, stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(self.dir, "log"), "w"))
            if wait_port(address, self.port, self.process, 30) and self._ready(bindir):
                return
            run.stop(self.process)
        raise RuntimeError("postgres did not start (log: " + os.path.join(self.dir, "log") + ")")

    def _ready(self, bindir: str) -> bool:
        for _ in range(100):
            if subprocess.run([os.path.join(bindir, "pg_isready"), "-h", self.address, "-p",
                               str(self.port)], stdout=subprocess.DEVNULL).returncode == 0:
                return True
            time.sleep(0.1)
        return False

    @property
    def dsn(self) -> str:
        return f"host={self.address} port={self.port} user=postgres dbname=postgres"


def _as(uid: int, gid: int):
    def setup() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return setup


def _pg_bindir() -> str:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True).stdout.strip()
        if os.path.exists(os.path.join(out, "postgres")):
            return out
    root = "/usr/lib/postgresql"
    versions = sorted(os.listdir(root), key=lambda v: int(v)) if os.path.isdir(root) else []
    if not versions:
        raise FileNotFoundError("PostgreSQL not found (Debian: apt-get install postgresql)")
    return os.path.join(root, versions[-1], "bin")
