"""What asyncio itself costs a lock cycle (measure 8's floor): the bare cycle of
bench/c/bare_loop.c (the core's acquire and release scripts by EVALSHA, a fresh unlock latch per
release, nothing else), made from Python on one connection each, twice:

    blocking   a socket's sendall and recv, on the calling thread
    asyncio    an asyncio Protocol on the running loop, a future per reply

No client runs around either: their ratio is what the loop costs any client that makes its round
trips on the loop's own thread with no work of its own, the floor an asyncio lock is compared
with. The script texts come from the core (rl_script_source, through build/bench_bare.so)."""

import asyncio
import ctypes
import os
import socket
import time

NAME = b"bench:aio-floor"
CHANNEL = b"redisson_lock__channel:{bench:aio-floor}"
OWNER = b"8c6e5a7e-0000-4000-8000-000000000000:1"
LEASE_MS, LATCH_TTL_MS = b"30000", b"20000"


def script_texts():
    """{name: text} of the core's acquire and release scripts."""
    path = os.environ.get("BENCH_BARE") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bench_bare.so")
    lib = ctypes.CDLL(path)
    lib.rl_script_name.restype = lib.rl_script_source.restype = ctypes.c_char_p
    lib.rl_script_name.argtypes = lib.rl_script_source.argtypes = [ctypes.c_int]
    texts, i = {}, 0
    while (name := lib.rl_script_name(i)) is not None:
        texts[name.decode()] = lib.rl_script_source(i)
        i += 1
    return {k: texts[k] for k in ("acquire", "release")}


def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Cycle:
    """The bytes of one cycle: the acquire (the same each time) and a release with a new latch."""

    def __init__(self, acquire_sha, release_sha):
        self.acquire = command(b"EVALSHA", acquire_sha, b"1", NAME, LEASE_MS, OWNER)
        self.release_sha, self.serial = release_sha, 0
        self.prefix = b"redisson_unlock_latch:{bench:aio-floor}:%016x" % int.from_bytes(
            os.urandom(8), "big")

    def release(self):
        self.serial += 1
        return command(b"EVALSHA", self.release_sha, b"3", NAME, CHANNEL,
                       self.prefix + b"%016x" % self.serial, b"0", LEASE_MS, OWNER,
                       LATCH_TTL_MS, b"publish")


def check(acquired, released):
    if acquired != b"$-1\r\n" or released not in (b":1\r\n", b":2\r\n"):
        raise SystemExit(f"the bare cycle got {acquired!r}, {released!r}")


class Floor:
    """One blocking connection, made at once; the asyncio one is made in the loop (start())."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        shas = {}
        for name, text in script_texts().items():
            self.sock.sendall(command(b"SCRIPT", b"LOAD", text))
            reply = self.line()  # "$40\r\n<sha>\r\n"
            while reply.count(b"\r\n") < 2:
                reply += self.line()
            shas[name] = reply.split(b"\r\n")[1]
        self.cycle = Cycle(shas["acquire"], shas["release"])
        self.transport = self.protocol = None

    def line(self):
        """One reply (a reply here is one line, read whole)."""
        data = self.sock.recv(4096)
        while not data.endswith(b"\r\n"):
            data += self.sock.recv(4096)
        return data

    def blocking_burst(self, n, seconds):
        t0, done, cycle = time.perf_counter(), 0, self.cycle
        while done < n and time.perf_counter() - t0 < seconds:
            self.sock.sendall(cycle.acquire)
            acquired = self.line()
            self.sock.sendall(cycle.release())
            check(acquired, self.line())
            done += 1
        return done / (time.perf_counter() - t0)

    async def start(self):
        loop = asyncio.get_running_loop()
        self.transport, self.protocol = await loop.create_connection(Replies, self.host,
                                                                     self.port)

    async def asyncio_burst(self, n, seconds):
        t0, done, cycle, p = time.perf_counter(), 0, self.cycle, self.protocol
        while done < n and time.perf_counter() - t0 < seconds:
            acquired = await p.call(self.transport, cycle.acquire)
            check(acquired, await p.call(self.transport, cycle.release()))
            done += 1
        return done / (time.perf_counter() - t0)

    def close(self):
        self.sock.close()
        if self.transport:
            self.transport.close()


class Replies(asyncio.Protocol):
    """One call at a time; a reply here is one line."""

    def connection_made(self, transport):
        self.buf, self.waiter = b"", None
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, transport, data):
        self.waiter = asyncio.get_running_loop().create_future()
        transport.write(data)
        return self.waiter

    def data_received(self, data):
        self.buf += data
        if self.buf.endswith(b"\r\n"):
            reply, self.buf = self.buf, b""
            self.waiter.set_result(reply)

    def connection_lost(self, exc):
        if self.waiter and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionError("closed"))
