"""The servers of a run: one redis-server bound to its node address and to one address per
client (see README.md), and a throwaway PostgreSQL. Both are children of the run (procs.Run)."""

import os
import pwd
import shutil
import socket
import subprocess
import time
from typing import Optional, Sequence

from procs import Run


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


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
    """redis-server on `address` (and every address of `aliases`), one port for all."""

    def __init__(self, run: Run, address: str, aliases: Sequence[str] = ()) -> None:
        self.run, self.address, self.aliases = run, address, aliases
        self.dir = os.path.join(run.dir, f"redis-{address}")
        os.makedirs(self.dir)
        for _ in range(5):
            self.port = free_port(address)
            self.process = run.spawn(
                ["redis-server", "--port", str(self.port), "--bind", address, *aliases,
                 "--save", "", "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
                 "--enable-debug-command", "yes", "--busy-reply-threshold", "100",
                 "--logfile", os.path.join(self.dir, "log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait_port(address, self.port, self.process, 10, b"PING\r\n", b"+PONG"):
                return
            run.stop(self.process)
        raise RuntimeError("redis-server did not start")

    def url(self, address: Optional[str] = None) -> str:
        return f"redis://{address or self.address}:{self.port}/0"


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
