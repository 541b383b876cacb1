"""A TCP proxy that injects network faults between a client and a redis-server.

In-process (pytest):   proxy = FaultProxy(port_of_redis); ...; proxy.close()
As a process (C tests): python3 proxy.py UPSTREAM_PORT  -> prints "port N", then reads commands,
                        one per line, from stdin and answers "ok": pass | cut | refuse |
                        blackhole | mute | latency SECONDS | quit

Modes:
- pass:      bytes flow both ways (after `latency` seconds each way, when set);
- refuse:    every connection is cut and new ones are refused (the listening socket is closed);
- blackhole: connections are accepted and kept, but nothing is forwarded either way;
- mute:      requests reach Redis, its answers are dropped (a reply lost on the way back);
- cut:       every connection is cut once; new ones are accepted (a server restart seen from
             the client).
"""

import select
import socket
import sys
import threading
import time
from typing import List, Optional


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.mode = "pass"
        self.latency = 0.0
        self.mu = threading.Lock()
        self.conns: List[socket.socket] = []
        self.closed = False
        self.listener: Optional[socket.socket] = self._listen(0)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    # ---- controls ----------------------------------------------------------------------------

    def pass_through(self) -> None:
        with self.mu:
            self.mode = "pass"
            if self.listener is None:
                self.listener = self._listen(self.port)

    def refuse(self) -> None:
        with self.mu:
            self.mode = "refuse"
            if self.listener is not None:
                self.listener.close()
                self.listener = None
            self._cut_locked()

    def blackhole(self) -> None:
        with self.mu:
            self.mode = "blackhole"

    def mute(self) -> None:
        with self.mu:
            self.mode = "mute"

    def cut(self) -> None:
        with self.mu:
            self._cut_locked()

    def set_latency(self, seconds: float) -> None:
        with self.mu:
            self.latency = seconds

    def close(self) -> None:
        with self.mu:
            self.closed = True
            if self.listener is not None:
                self.listener.close()
                self.listener = None
            self._cut_locked()

    # ---- internals ---------------------------------------------------------------------------

    @staticmethod
    def _listen(port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(64)
        s.settimeout(0.05)
        return s

    def _cut_locked(self) -> None:
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        self.conns = []

    def _accept_loop(self) -> None:
        while True:
            with self.mu:
                if self.closed:
                    return
                listener = self.listener
            if listener is None:
                time.sleep(0.02)
                continue
            try:
                client, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self.mu:
                self.conns += [client, upstream]
            for src, dst, replies in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(src, dst, replies), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        try:
            while True:
                ready, _, _ = select.select([src], [], [], 0.05)
                if not ready:
                    if src.fileno() < 0:
                        return
                    continue
                data = src.recv(65536)
                if not data:
                    break
                received = time.monotonic()
                with self.mu:
                    mode, latency = self.mode, self.latency
                if mode == "blackhole" or (mode == "mute" and replies):
                    continue  # swallowed: the peer waits for an answer that never comes
                if latency > 0:
                    time.sleep(max(0.0, received + latency - time.monotonic()))
                dst.sendall(data)
        except (OSError, ValueError):
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main() -> None:
    proxy = FaultProxy(int(sys.argv[1]))
    print(f"port {proxy.port}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command = words[0]
        if command == "quit":
            break
        if command == "pass":
            proxy.pass_through()
        elif command == "refuse":
            proxy.refuse()
        elif command == "blackhole":
            proxy.blackhole()
        elif command == "mute":
            proxy.mute()
        elif command == "cut":
            proxy.cut()
        elif command == "latency":
            proxy.set_latency(float(words[1]))
        else:
            print(f"error unknown command {command}", flush=True)
            continue
        print("ok", flush=True)
    proxy.close()


if __name__ == "__main__":
    main()
