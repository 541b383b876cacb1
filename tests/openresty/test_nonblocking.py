"""A waiting acquire never blocks its worker: with one worker, 200 requests wait on a held lock
while /ping keeps answering quickly; then every waiter gets the lock in turn."""

import time
from concurrent.futures import ThreadPoolExecutor

from conftest import fields
from testkit import wait_for

WAITERS = 200


def test_ping_answers_while_200_requests_wait(server, raw, make_nginx):
    ng = make_nginx(workers=1)
    with ThreadPoolExecutor(WAITERS + 1) as pool:
        holder = pool.submit(ng.get, "/hold?name=busy&secs=4", 60)
        assert wait_for(lambda: raw("EXISTS", "busy") == 1, 5)
        waiters = [pool.submit(ng.get, "/hold?name=busy&timeout=60", 120) for _ in range(WAITERS)]
        # every waiter is in: the worker handles them all (one subscription, 200 semaphore waits)
        assert wait_for(
            lambda: raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{busy}")[1] == 1, 10)
        time.sleep(0.5)
        pings = []
        for _ in range(100):
            t0 = time.monotonic()
            status, body = ng.get("/ping", 5)
            pings.append(time.monotonic() - t0)
            assert (status, body) == (200, "pong\n")
        assert not holder.done(), "the pings ran while the lock was held"
        answers = [fields(w.result()[1]) for w in waiters]
        held = fields(holder.result()[1])
    pings.sort()
    p99 = pings[int(len(pings) * 0.99) - 1]
    print(f"/ping with {WAITERS} waiters: p50 {pings[50] * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms")
    assert p99 < 0.020
    assert held["released"] == "true"
    assert all(a["acquired"] == "true" and a["released"] == "true" for a in answers)
    # one after the other: no two waiters held it at once
    spans = sorted((float(a["got"]), float(a["left"])) for a in answers)
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))
