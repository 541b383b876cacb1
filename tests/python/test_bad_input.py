"""Bad input: each case raises its exact exception type and changes nothing else in Redis."""

import math
import socket
import threading

import pytest

import redlease
from redlease.testing import RedisServer

NAN, INF = math.nan, math.inf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def snapshot(raw):
    """Every key with its serialized value: what 'nothing else changed' compares. Unlock latches
    are left out: one lives from a release until the next call on the same connection."""
    return {key: raw("DUMP", key) for key in sorted(raw("KEYS", "*"))
            if not key.startswith(b"redisson_unlock_latch:")}


@pytest.fixture
def world(server, raw, make_client):
    """Another client's held lock and plain data, which no bad call may touch."""
    other = make_client()
    other.lock("someone-elses").acquire()
    raw("SET", "plain", "value")
    raw("RPUSH", "a-list", "x")
    yield snapshot(raw)


def in_other_thread(fn):
    box = {}

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    if "error" in box:
        raise box["error"]


def release_twice(c):
    lock = c.lock("twice")
    lock.acquire()
    lock.release()
    lock.release()


def release_in_other_thread(c):
    lock = c.lock("mine")
    lock.acquire()
    try:
        in_other_thread(lock.release)
    finally:
        lock.release()


CASES = [
    # names
    ("name int", lambda c: c.lock(42), TypeError, "str or bytes"),
    ("name None", lambda c: c.lock(None), TypeError, "str or bytes"),
    ("name list", lambda c: c.lock(["a"]), TypeError, "str or bytes"),
    ("name empty str", lambda c: c.lock(""), ValueError, "empty"),
    ("name empty bytes", lambda c: c.lock(b""), ValueError, "empty"),
    # leases
    ("lease 0", lambda c: c.lock("x", lease=0), ValueError, "lease"),
    ("lease negative", lambda c: c.lock("x", lease=-1), ValueError, "lease"),
    ("lease NaN", lambda c: c.lock("x", lease=NAN), ValueError, "NaN"),
    ("lease inf", lambda c: c.lock("x", lease=INF), ValueError, "lease"),
    ("lease str", lambda c: c.lock("x", lease="10"), TypeError, "lease"),
    ("acquire lease 0", lambda c: c.lock("x").acquire(lease=0), ValueError, "lease"),
    ("acquire lease -inf", lambda c: c.lock("x").acquire(lease=-INF), ValueError, "lease"),
    ("lease 1e300", lambda c: c.lock("x").acquire(lease=1e300), ValueError, "lease"),
    ("lease huge int", lambda c: c.lock("x", lease=10 ** 400), ValueError, "lease"),
    ("timeout huge int", lambda c: c.lock("x", timeout=10 ** 400), ValueError, "timeout"),
    ("watchdog_timeout 1e300", lambda c: redlease.Client(c.url, watchdog_timeout=1e300),
     ValueError, "watchdog_timeout"),
    # timeouts
    ("timeout -2", lambda c: c.lock("x", timeout=-2), ValueError, "timeout"),
    ("timeout -0.5", lambda c: c.lock("x").acquire(timeout=-0.5), ValueError, "timeout"),
    ("timeout NaN", lambda c: c.lock("x", timeout=NAN), ValueError, "NaN"),
    ("timeout inf", lambda c: c.lock("x", timeout=INF), ValueError, "timeout"),
    ("timeout -inf", lambda c: c.lock("x").acquire(timeout=-INF), ValueError, "timeout"),
    ("timeout str", lambda c: c.lock("x", timeout="1"), TypeError, "timeout"),
    ("timeout list", lambda c: c.lock("x").acquire(timeout=[]), TypeError, "timeout"),
    ("non-blocking with timeout", lambda c: c.lock("x").acquire(False, 1), ValueError,
     "non-blocking"),
    ("max_hold 0", lambda c: c.lock("x", max_hold=0), ValueError, "max_hold"),
    # client options
    ("watchdog_timeout 0", lambda c: redlease.Client(c.url, watchdog_timeout=0), ValueError,
     "watchdog_timeout"),
    ("watchdog_timeout negative", lambda c: redlease.Client(c.url, watchdog_timeout=-1),
     ValueError, "watchdog_timeout"),
    ("watchdog_timeout NaN", lambda c: redlease.Client(c.url, watchdog_timeout=NAN), ValueError,
     "NaN"),
    ("watchdog_timeout str", lambda c: redlease.Client(c.url, watchdog_timeout="30"), TypeError,
     "watchdog_timeout"),
    ("connect_timeout negative", lambda c: redlease.Client(c.url, connect_timeout=-1), ValueError,
     "connect_timeout"),
    ("command_timeout NaN", lambda c: redlease.Client(c.url, command_timeout=NAN), ValueError,
     "NaN"),
    ("on_lost not callable", lambda c: redlease.Client(c.url, on_lost=3), TypeError, "on_lost"),
    ("handover_grace negative", lambda c: redlease.Client(c.url, handover_grace=-0.001),
     ValueError, "handover_grace"),
    # beyond 1 s, refused by the core: the value reached it
    ("handover_grace 2 s", lambda c: redlease.Client(c.url, handover_grace=2), ValueError,
     "handover_grace"),
    ("failover_grace 61 s", lambda c: redlease.Client(c.url, failover_grace=61), ValueError,
     "failover_grace must be from 0 to 60000 ms"),
    # URLs
    ("url http", lambda c: redlease.Client("http://127.0.0.1:6379"), ValueError, ""),
    ("url no host", lambda c: redlease.Client("redis://"), ValueError, ""),
    ("url port too big", lambda c: redlease.Client("redis://127.0.0.1:99999"), ValueError,
     "port"),
    ("url port 0", lambda c: redlease.Client("redis://127.0.0.1:0"), ValueError, "port"),
    ("url unix no path", lambda c: redlease.Client("unix://"), ValueError, ""),
    ("url not str", lambda c: redlease.Client(42), TypeError, ""),
    # unreachable, refused, wrong type
    ("unreachable", lambda c: redlease.Client(f"redis://127.0.0.1:{free_port()}/0",
                                               connect_timeout=1).lock("x").acquire(timeout=0),
     redlease.ConnectionError, "127.0.0.1"),
    ("wrong type: string", lambda c: c.lock("plain").acquire(timeout=0), redlease.ServerError,
     "WRONGTYPE"),
    ("wrong type: list", lambda c: c.lock("a-list").acquire(timeout=0), redlease.ServerError,
     "WRONGTYPE"),
    ("wrong type: force unlock string", lambda c: c.lock("plain").force_unlock(),
     redlease.ServerError, "WRONGTYPE"),
    # ownership
    ("release never held", lambda c: c.lock("never").release(), redlease.NotOwnedError,
     "not held"),
    ("double release", release_twice, redlease.NotOwnedError, "not held"),
    ("release from another thread", release_in_other_thread, redlease.NotOwnedError, "not held"),
    ("release another client's lock", lambda c: c.lock("someone-elses").release(),
     redlease.NotOwnedError, "not held"),
]


@pytest.mark.parametrize("call, exc, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_refused_and_changes_nothing(world, raw, client, call, exc, words):
    with pytest.raises(exc) as info:
        call(client)
    assert type(info.value) is exc  # exactly, not a subclass
    assert words in str(info.value)
    assert snapshot(raw) == world


def test_a_wrong_password_is_a_connection_error():
    with RedisServer(extra_args=["--requirepass", "right"]) as s:
        url = f"redis://:wrong@127.0.0.1:{s.port}/0"
        with redlease.Client(url) as c:
            with pytest.raises(redlease.ConnectionError) as info:
                c.lock("x").acquire(timeout=0)
            assert "WRONGPASS" in str(info.value) or "invalid" in str(info.value)
        with redlease.Client(f"redis://127.0.0.1:{s.port}/0") as c:  # no password at all
            with pytest.raises(redlease.ConnectionError, match="NOAUTH"):
                c.lock("x").acquire(timeout=0)
        with redlease.Client(f"redis://:right@127.0.0.1:{s.port}/0") as c, c.lock("x"):
            pass


CLOSED_CALLS = [
    ("acquire", lambda c, lock: lock.acquire()),
    ("release", lambda c, lock: lock.release()),
    ("locked", lambda c, lock: lock.locked()),
    ("held", lambda c, lock: lock.held()),
    ("remaining", lambda c, lock: lock.remaining()),
    ("force_unlock", lambda c, lock: lock.force_unlock()),
    ("with", lambda c, lock: lock.__enter__()),
    ("lock", lambda c, lock: c.lock("y")),
    ("id", lambda c, lock: c.id),
]


@pytest.mark.parametrize("call", [c[1] for c in CLOSED_CALLS], ids=[c[0] for c in CLOSED_CALLS])
def test_any_call_after_close_says_the_client_is_closed(server, call):
    c = redlease.Client(server.url)
    lock = c.lock("x")
    c.close()
    with pytest.raises(redlease.ClientClosedError, match="closed"):
        call(c, lock)


@pytest.mark.parametrize("name", [b"n" * (1 << 20), b"nul\x00inside", b"\xff\xfe not utf-8",
                                  "emoji \N{SNOWMAN}", b"{tag}:braces"],
                         ids=["1 MiB", "NUL", "non-UTF-8", "unicode", "hash tag"])
def test_unusual_names_work(client, raw, name):
    lock = client.lock(name)
    key = name.encode() if isinstance(name, str) else name
    with lock:
        assert raw("EXISTS", key) == 1 and lock.held()
    assert raw("EXISTS", key) == 0
