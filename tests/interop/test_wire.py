"""The same bytes on the wire: for the same sequence of lock operations, Redisson, redlease's
Python client and its Lua rock make Redis run the same commands on the same keys (seen with
MONITOR, scripts' own calls included) and publish the same messages on the same channels (seen
by a PSUBSCRIBE * listener).

What may differ, and is normalized before comparing: the owner field (each client's UUID and
thread), the unlock request id (random), the unlock latch's PX (Redisson computes it from its
retry settings, redlease has a fixed one), the case of the publish command's name, and the
script text around the calls (redlease loads its own scripts). redlease's force unlock and
renewal scripts also read the key's TYPE first (to refuse a key that is not a lock), a read
that changes nothing: TYPE calls are left out of the comparison and counted separately."""

import re
import time

import pytest

from kit import Listener, channel
from testkit import wait_for

WATCHDOG = 1.5           # seconds; the same watchdog timeout on all three sides
REDISSON_OPTIONS = {"watchdog_ms": int(WATCHDOG * 1000)}
LEASE = 10.0

NAMES = ["plain", "orders:{42}:x"]

OWNER = re.compile(rb"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+$")
LATCH = re.compile(rb"^(redisson_unlock_latch:.*):[0-9a-f]{32}$")
MONITOR_LINE = re.compile(r'^\+?[0-9.]+ \[[0-9]+ ([^\]]+)\] (.*)$')
ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b", '"': b'"', "\\": b"\\"}


def unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "x":
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
                continue
            out += ESCAPES.get(nxt, nxt.encode())
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def parse(line: str):
    """A MONITOR line -> (source, [arg bytes]); source is "lua" for a script's own calls."""
    m = MONITOR_LINE.match(line)
    assert m, f"unexpected MONITOR line {line!r}"
    return m.group(1), [unescape(a) for a in ARG.findall(m.group(2))]


class Captured:
    """One side's MONITOR segment, normalized: the script calls in order (TYPE reads apart), the
    other commands touching the lock's keys, and the latch keys made and deleted."""

    def __init__(self, lines, name: bytes) -> None:
        self.calls, self.others, self.types = [], [], 0
        self.latches_set, self.latches_deleted, self.latch_ttls = [], [], []
        for line in lines:
            source, args = parse(line)
            cmd = args[0].lower()
            if source != "lua":
                if b"redlease-interop-mark" in args or cmd in (b"evalsha", b"eval", b"script"):
                    continue  # the test's marks; script calls are compared by their own calls
                if cmd == b"del" and len(args) == 2 and LATCH.match(args[1]):
                    self.latches_deleted.append(args[1])
                elif any(name in a for a in args[1:]):
                    self.others.append(self.normal(cmd, args[1:]))
                continue
            if cmd == b"type":
                self.types += 1
                continue
            if cmd == b"set" and LATCH.match(args[1]):
                self.latches_set.append(args[1])
                self.latch_ttls.append(int(args[4]))
            self.calls.append(self.normal(cmd, args[1:]))

    @staticmethod
    def normal(cmd, args):
        out = [cmd.decode()]
        for i, a in enumerate(args):
            if OWNER.match(a):
                out.append("<owner>")
            elif LATCH.match(a):
                out.append(LATCH.match(a).group(1).decode(errors="replace") + ":<request id>")
            elif cmd == b"set" and i == 3 and out[-1] == "px":
                out.append("<latch ttl>")
            else:
                out.append(a.decode(errors="replace"))
        return tuple(out)


@pytest.fixture
def monitor(server):
    m = Listener(server.url, "MONITOR")
    yield m
    m.close()


@pytest.fixture
def published(server):
    p = Listener(server.url, "PSUBSCRIBE", "*")
    yield p
    p.close()


def no_latches(raw):
    assert wait_for(lambda: raw("KEYS", "redisson_unlock_latch*") == [], 5), \
        f"latch keys left: {raw('KEYS', 'redisson_unlock_latch*')}"


def java_sequence(java, name):
    jl = java.lock(name)
    jl.lock("t1", int(LEASE * 1000))
    jl.lock("t1", int(LEASE * 1000))
    jl.unlock("t1")
    jl.unlock("t1")
    jl.lock("t1")                   # watchdog mode
    assert jl.force_unlock("t1") is True
    assert jl.force_unlock("t1") is False


def python_sequence(client, name):
    lock = client.lock(name)
    assert lock.acquire(lease=LEASE)
    assert lock.acquire(lease=LEASE)
    lock.release()
    lock.release()
    assert lock.acquire()
    assert lock.force_unlock() is True
    assert lock.force_unlock() is False


def lua_sequence(peer, name):
    assert peer.acquire(name, lease=LEASE)
    assert peer.acquire(name, lease=LEASE)
    assert peer.release(name)
    assert peer.release(name)
    assert peer.acquire(name)
    assert peer.call("force_unlock", name) is True
    assert peer.call("force_unlock", name) is False


def capture_all(java, make_client, lua, raw, listeners, name):
    """Runs the sequence on each side between marks; returns {side: [events]} per listener."""
    client = make_client(watchdog_timeout=WATCHDOG)
    peer = lua(watchdog_timeout=WATCHDOG)
    runs = {"java": lambda: java_sequence(java, name),
            "python": lambda: python_sequence(client, name),
            "lua": lambda: lua_sequence(peer, name)}
    for listener in listeners:
        listener.mark("start")
    for side, run in runs.items():
        run()
        no_latches(raw)  # Redisson deletes its latch after the reply; redlease with its next call
        for listener in listeners:
            listener.mark(side)
    segments = []
    for listener in listeners:
        cut, previous = {}, "start"
        for side in runs:
            cut[side] = listener.between(previous, side)
            previous = side
        segments.append(cut)
    return segments


@pytest.mark.parametrize("suffix", NAMES)
def test_the_same_commands_on_the_same_keys(java, raw, make_client, lua, monitor, name, suffix):
    name = f"{name}:{suffix}"
    (segments,) = capture_all(java, make_client, lua, raw, [monitor], name)
    seen = {side: Captured(lines, name.encode()) for side, lines in segments.items()}
    ref = seen["java"]
    assert ref.calls, "MONITOR showed no script calls for Redisson"
    # Redisson's own sequence, as docs/protocol.md describes it.
    assert ("hincrby", name, "<owner>", "1") in ref.calls
    assert ("publish", channel(name).decode(), "0") in ref.calls
    for side in ("python", "lua"):
        got = seen[side]
        assert got.calls == ref.calls, f"{side} script calls differ from Redisson's"
        assert got.others == ref.others, f"{side} plain commands differ from Redisson's"
        assert len(got.latches_set) == len(ref.latches_set) == 2
        assert sorted(got.latches_deleted) == sorted(got.latches_set), f"{side} latch not deleted"
        assert all(ttl > 0 for ttl in got.latch_ttls)
        assert got.types == 2  # force unlock's TYPE check, twice (Redisson: none)
    assert sorted(ref.latches_deleted) == sorted(ref.latches_set)
    assert ref.types == 0


@pytest.mark.parametrize("suffix", NAMES)
def test_the_same_messages_on_the_same_channels(java, raw, make_client, lua, published, name,
                                                suffix):
    name = f"{name}:{suffix}"
    (segments,) = capture_all(java, make_client, lua, raw, [published], name)
    messages = {side: [(m[2], m[3]) for m in items if m[0] == b"pmessage"]
                for side, items in segments.items()}
    # The last release and the force unlock of a held lock publish; nothing else does.
    expected = [(channel(name), b"0")] * 2
    assert messages == {"java": expected, "python": expected, "lua": expected}


def test_the_same_renewals(java, raw, make_client, lua, monitor, name):
    """Held in watchdog mode for more than two renewal periods: each side renews with the same
    PEXPIRE of its watchdog timeout, and only while held."""
    client = make_client(watchdog_timeout=WATCHDOG)
    peer = lua(watchdog_timeout=WATCHDOG)
    jl = java.lock(name)
    lock = client.lock(name)
    hold = 3.5 * WATCHDOG / 3  # renewals due at 1/3 and 2/3 of the timeout, and at 1

    def java_hold():
        jl.lock("t1")
        time.sleep(hold)
        jl.unlock("t1")

    # redlease deletes a release's latch with the next call on the same connection (Redisson
    # right after the reply, from another connection): one more call, and none is left.
    def python_hold():
        assert lock.acquire()
        time.sleep(hold)
        lock.release()
        assert not lock.locked()

    def lua_hold():
        assert peer.acquire(name)
        time.sleep(hold)
        assert peer.release(name)
        assert peer.call("locked", name) is False

    renewals = {}
    monitor.mark("start")
    previous = "start"
    for side, run in (("java", java_hold), ("python", python_hold), ("lua", lua_hold)):
        run()
        no_latches(raw)
        monitor.mark(side)
        calls = Captured(monitor.between(previous, side), name.encode()).calls
        previous = side
        # Everything but the acquire and release scripts' own calls: the renewals.
        renewals[side] = [c for c in calls if c[0] in ("hexists", "pexpire")]
    expected_pexpire = ("pexpire", name, str(int(WATCHDOG * 1000)))
    for side, calls in renewals.items():
        # the acquire and 2 renewals or more
        assert calls.count(expected_pexpire) >= 3, f"{side}: {calls}"
        assert set(calls) == {expected_pexpire, ("hexists", name, "<owner>")}, f"{side}: {calls}"
