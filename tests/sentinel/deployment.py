"""A throwaway Sentinel deployment on loopback: a master, a replica and three sentinels, each a
redis-server on a free port, stopped by pid. ``url`` is the redis+sentinel:// URL of it. With
``tls`` (certificates of tests/tls/make-certs) every server and sentinel also has a TLS port, and
they replicate, monitor and name each other there: ``url`` is then rediss+sentinel://."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from redlease.testing import RedisServer
from testkit import Raw, wait_for

MASTER = "mymaster"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_args(tls, port):
    """redis-server's arguments for a TLS port `port` with the certificates of ``tls`` (a
    TlsCerts): the server's certificate, the client's for its own connections (replication,
    sentinels, the cluster bus: the server's certificate is for servers only), the CA trusted."""
    c = tls.dir
    return ["--tls-port", str(port), "--tls-cert-file", f"{c}/server.crt",
            "--tls-key-file", f"{c}/server.key", "--tls-client-cert-file", f"{c}/client.crt",
            "--tls-client-key-file", f"{c}/client.key", "--tls-ca-cert-file", f"{c}/ca.crt",
            "--tls-replication", "yes",
            "--tls-auth-clients", "yes" if tls.clients_need_certs else "no"]


class TlsCerts:
    """Where the certificates are (tests/tls/make-certs), and whether the servers require a
    client certificate (mutual TLS)."""

    def __init__(self, directory, clients_need_certs=False):
        self.dir, self.clients_need_certs = str(directory), clients_need_certs


class Sentinel:
    """One redis-server --sentinel process (with ``tls``, also on ``tls_port``)."""

    def __init__(self, master_port, down_after_ms, port=None, tls=None):
        self.dir = tempfile.mkdtemp(prefix="redlease-sentinel-")
        # a free port can be taken between probing and binding: again on others (unless given)
        for _ in range(1 if port else 3):
            self.port = port or free_port()
            self.tls_port = tls and free_port()
            if self._start(master_port, down_after_ms, tls):
                return
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError("redis-sentinel did not start")

    def _start(self, master_port, down_after_ms, tls):
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w") as f:
            if tls:  # the same settings, as configuration lines
                args = tls_args(tls, self.tls_port)
                f.write("".join(f"{k[2:]} {v}\n" for k, v in zip(args[::2], args[1::2])))
            f.write(f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                    f"sentinel monitor {MASTER} 127.0.0.1 {master_port} 2\n"
                    f"sentinel down-after-milliseconds {MASTER} {down_after_ms}\n"
                    f"sentinel failover-timeout {MASTER} 4000\n"
                    f"sentinel parallel-syncs {MASTER} 1\n")
        self.process = subprocess.Popen(["redis-server", conf, "--sentinel"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_for(lambda: self.process.poll() is not None or self._answers(), 10) and \
                self.process.poll() is None:
            return True
        self.process.kill()
        self.process.wait()
        return False

    def _answers(self):
        try:
            r = Raw(f"redis://127.0.0.1:{self.port}")
            try:
                return r("PING") == "PONG"
            finally:
                r.close()
        except OSError:
            return False

    def __call__(self, *args):
        r = Raw(f"redis://127.0.0.1:{self.port}")
        try:
            return r(*args)
        finally:
            r.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Deployment:
    """Master, replica, three sentinels that agree on both. ``master_server()`` is the one
    sentinels call master now."""

    def __init__(self, down_after_ms=1000, tls=None):
        self.tls = tls
        self.servers = [self._server([])]
        first = self.servers[0]
        self.servers.append(self._server(["--replicaof", "127.0.0.1",
                                          str(first.tls_port or first.port)]))
        self.sentinels = []
        try:
            for _ in range(3):
                self.sentinels.append(Sentinel(first.tls_port or first.port, down_after_ms,
                                               tls=tls))
            if not wait_for(self._settled, 20):
                raise RuntimeError("the sentinels did not see the replica and each other")
        except BaseException:
            self.close()
            raise

    def _server(self, args):
        for _ in range(3):  # (a TLS port taken meanwhile: another one)
            port = self.tls and free_port()
            s = RedisServer(extra_args=args + (tls_args(self.tls, port) if self.tls else []))
            s.tls_port = port  # (None: no TLS)
            try:
                return s.start()
            except RuntimeError:
                if not self.tls:
                    raise
        raise RuntimeError("redis-server did not start with a TLS port")

    @property
    def url(self):
        if self.tls:
            hosts = ",".join(f"127.0.0.1:{s.tls_port}" for s in self.sentinels)
            return f"rediss+sentinel://{hosts}/{MASTER}/0"
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{MASTER}/0"

    def _settled(self):
        for s in self.sentinels:
            replicas = s("SENTINEL", "REPLICAS", MASTER)
            if len(replicas) != 1 or b"s_down" in b"".join(replicas[0]):
                return False
            fields = s("SENTINEL", "MASTER", MASTER)
            info = dict(zip(fields[::2], fields[1::2], strict=True))
            if int(info[b"num-other-sentinels"]) != 2:
                return False
        return self._replica_in_sync()

    def _replica_in_sync(self):
        raw = Raw(self.master_server().url)
        try:
            info = raw("INFO", "replication").decode()
        finally:
            raw.close()
        return "connected_slaves:1" in info and "state=online" in info

    def master_port(self):
        """The master's port as the sentinels name it (its TLS port with ``tls``)."""
        host, port = self.sentinels[0]("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
        return int(port)

    def master_server(self):
        port = self.master_port()
        return next(s for s in self.servers if port in (s.port, s.tls_port))

    def on_master(self, *args):
        """One command at the master the sentinels name now."""
        raw = Raw(self.master_server().url)
        try:
            return raw(*args)
        finally:
            raw.close()

    def replica_server(self):
        port = self.master_port()
        return next(s for s in self.servers if port not in (s.port, s.tls_port))

    def cut_replica_off(self):
        """Cuts the replica off the master for good: the master now asks a password the replica
        does not have, and drops it. Writes from then on never reach the replica, so a failover
        loses them. Connections already open to the master stay logged in."""
        assert wait_for(lambda: Raw(self.replica_server().url)("ROLE")[3] == b"connected", 20)
        master = Raw(self.master_server().url)
        try:
            assert master("CONFIG", "SET", "requirepass", "not-the-replicas") == "OK"
            assert master("CLIENT", "KILL", "TYPE", "replica") == 1
        finally:
            master.close()

    def subscribers(self):
        """How many connections are subscribed on each sentinel (CLIENT LIST's cmd=subscribe)."""
        return [s("CLIENT", "LIST").count(b"cmd=subscribe") for s in self.sentinels]

    @contextlib.contextmanager
    def failover_with_the_first_sentinel_paused(self, timeout=30):
        """Pauses sentinel 0 (SIGSTOP: its connections stay open and silent), has sentinel 1 fail
        the master over, and yields the time.monotonic() at which sentinel 1 names the new
        master; sentinel 0 runs again on leaving."""
        before = self.master_port()
        self.sentinels[0].process.send_signal(signal.SIGSTOP)
        try:
            self.sentinels[1]("SENTINEL", "FAILOVER", MASTER)
            assert wait_for(lambda: int(self.sentinels[1](
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)[1]) != before, timeout)
            yield time.monotonic()
        finally:
            self.sentinels[0].process.send_signal(signal.SIGCONT)

    def failover(self, timeout=30):
        """SENTINEL FAILOVER; returns once the replica has become master and every sentinel
        says so, and the old master replicates from it."""
        old = self.master_port()
        assert wait_for(self._replica_in_sync, 20)
        self.sentinels[0]("SENTINEL", "FAILOVER", MASTER)
        settled = wait_for(lambda: all(
            int(s("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)[1]) != old
            for s in self.sentinels), timeout)
        assert settled, "the failover did not complete"
        return time.monotonic()

    def close(self):
        for s in self.sentinels:
            s.stop()
        for s in self.servers:
            s.close()
