"""The same bytes on the wire as the C rock: for the interop suite's sequence of lock operations
(tests/interop/test_wire.py), MONITOR shows the C rock (lua5.4) and the OpenResty backend making
Redis run the same script calls on the same keys, setting and deleting the same unlock latches;
and a Redisson-format lock taken by redlease's Python client (whose format the interop suite
proves against Redisson itself) excludes the nginx handler both ways."""

import threading
import time

import redlease
from conftest import fields
from kit import Listener
from luapeer import LuaPeer
from test_wire import Captured, lua_sequence
from testkit import wait_for

NAMES = ["wire", "orders:{42}:x"]


def no_latches(raw):
    assert wait_for(lambda: raw("KEYS", "redisson_unlock_latch*") == [], 5), \
        f"latch keys left: {raw('KEYS', 'redisson_unlock_latch*')}"


def test_same_script_calls_as_the_c_rock(server, raw, make_nginx):
    ng = make_nginx(watchdog=1.5)
    peer = LuaPeer(server.url, watchdog_timeout=1.5)
    monitor = Listener(server.url, "MONITOR")
    try:
        for name in NAMES:
            monitor.mark(f"{name}-start")
            lua_sequence(peer, name)
            no_latches(raw)
            monitor.mark(f"{name}-c")
            status, body = ng.get("/sequence?name=" + name.replace("{", "%7B").replace("}", "%7D"))
            assert fields(body)["steps"] == "true,true,true,true,true,false", body
            no_latches(raw)
            monitor.mark(f"{name}-resty")
            c = Captured(monitor.between(f"{name}-start", f"{name}-c"), name.encode())
            r = Captured(monitor.between(f"{name}-c", f"{name}-resty"), name.encode())
            assert r.calls == c.calls and len(c.calls) > 10
            assert r.types == c.types
            assert r.others == c.others
            assert len(r.latches_set) == len(c.latches_set) == 2
            assert sorted(r.latches_deleted) == sorted(r.latches_set)
            assert sorted(c.latches_deleted) == sorted(c.latches_set)
    finally:
        monitor.close()
        peer.close()


def test_python_lock_blocks_nginx_and_back(server, make_nginx):
    ng = make_nginx()
    py = redlease.Client(server.url, watchdog_timeout=1.5)
    try:
        lock = py.lock("cross")
        assert lock.acquire(timeout=0)
        f = fields(ng.get("/hold?name=cross&timeout=0.3")[1])
        assert f["acquired"] == "false" and f["err"].startswith("timeout:"), f
        # a waiting handler is woken by the Python release (Redisson's unlock message)
        result = {}
        t = threading.Thread(target=lambda: result.update(
            fields(ng.get("/hold?name=cross&timeout=10")[1])))
        t.start()
        time.sleep(0.5)
        released_at = time.time()
        lock.release()
        t.join(15)
        assert result["acquired"] == "true", result
        assert float(result["got"]) - released_at < 0.5
        # and the other way round
        t = threading.Thread(target=lambda: result.update(
            fields(ng.get("/hold?name=cross&secs=1.5")[1])))
        t.start()
        assert wait_for(lambda: lock.locked(), 5)
        assert not lock.acquire(timeout=0.2)
        assert lock.acquire(timeout=10)  # woken by the handler's release
        assert result["released"] == "true"
        lock.release()
        t.join(15)
    finally:
        py.close()
