"""The nginx handler and a real Redisson (the interop suite's Java driver, tests/interop/java,
built by `make interop-java`) on one lock name: Java's hold keeps the handler out and its unlock
wakes the waiting handler; the handler's hold (renewed by the worker's watchdog past its lease)
keeps Java out and its release wakes a blocked Java lock()."""

import threading
import time

from conftest import fields
from kit import wait_subscribed
from redisson import Redisson
from testkit import wait_for

WATCHDOG = 1.0


def test_java_and_nginx_exclude_and_wake_each_other(server, raw, make_nginx):
    ng = make_nginx(watchdog=WATCHDOG)
    java = Redisson(server.url, watchdog_ms=int(WATCHDOG * 1000))
    try:
        jl = java.lock("shared:java")
        jl.lock("t1", 20000)
        f = fields(ng.get("/hold?name=shared:java&timeout=0.3")[1])
        assert f["acquired"] == "false" and f["err"].startswith("timeout:"), f
        waiting = {}
        t = threading.Thread(target=lambda: waiting.update(
            fields(ng.get("/hold?name=shared:java&timeout=10")[1])))
        t.start()
        wait_subscribed(raw, "shared:java", 1)
        unlocked_at = time.time()
        jl.unlock("t1")
        t.join(15)
        assert waiting["acquired"] == "true", waiting
        assert float(waiting["got"]) - unlocked_at < 0.5  # woken by Redisson's unlock message

        # nginx holds past three of its leases: Java stays out, then a blocked lock() is woken
        holder = {}
        t = threading.Thread(target=lambda: holder.update(
            fields(ng.get(f"/hold?name=shared:java&secs={3.5 * WATCHDOG}")[1])))
        t.start()
        assert wait_for(lambda: raw("EXISTS", "shared:java") == 1, 5)
        started = time.monotonic()
        while time.monotonic() - started < 2.5 * WATCHDOG:
            assert jl.try_lock("t2", 0) is False
            time.sleep(0.1)
        blocked = jl.start("t3", "lock")
        t.join(15)
        blocked.result(10)
        ref_wall, ref_mono = time.time(), time.monotonic()
        assert holder["released"] == "true" and holder["lost"] == "false", holder
        # Java's lock() returned soon after the handler's release began (well within the
        # lease it would otherwise wait out): woken by the handler's unlock message
        delay = (blocked.received - ref_mono) - (float(holder["left"]) - ref_wall)
        print(f"Java woken {delay * 1000:.1f} ms after the handler's release began")
        assert 0 <= delay + 0.002 and delay < 0.3, delay
        assert jl.is_held_by_current_thread("t3") is True
        jl.unlock("t3")
    finally:
        java.close()
