"""A PostgreSQL of the test's own for the fencing tests: initdb in a temporary directory,
`postgres` on 127.0.0.1 and a free port (as the postgres user when run as root: it refuses
root), stopped by pid."""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional


def _bindir() -> Optional[str]:
    found = shutil.which("postgres") or shutil.which("pg_ctl")
    if found:
        return os.path.dirname(os.path.realpath(found))
    root = "/usr/lib/postgresql"
    versions = sorted(os.listdir(root), key=int) if os.path.isdir(root) else []
    return os.path.join(root, versions[-1], "bin") if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self) -> None:
        bindir = _bindir()
        if bindir is None:
            raise FileNotFoundError("PostgreSQL not found (Debian: apt-get install postgresql)")
        self.dir = tempfile.mkdtemp(prefix="redlease-pg-")
        self.process: Optional[subprocess.Popen] = None
        user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

        def as_user() -> None:
            if user:
                os.setgroups([])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)

        if user:
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        data = os.path.join(self.dir, "data")
        subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "-A",
                        "trust", "--no-sync", "-E", "UTF8"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=as_user)
        self.port = _free_port()
        self.process = subprocess.Popen(
            [os.path.join(bindir, "postgres"), "-D", data, "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}",
             "-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=20"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "w"),
            preexec_fn=as_user)
        if not self._ready(30):
            self.stop()
            raise RuntimeError("postgres did not start")

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def _ready(self, timeout: float) -> bool:
        import psycopg
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
