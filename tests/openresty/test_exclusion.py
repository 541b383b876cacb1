"""Mutual exclusion across two nginx workers and a Python redlease client on one name (an overlap
detector in Redis), and hand-off between two nginx requests woken by pub/sub."""

import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import redlease
from conftest import fields
from testkit import Raw, wait_for


def python_critical(url, name, key, n):
    client = redlease.Client(url, watchdog_timeout=1.5)
    raw = Raw(url)
    done = overlaps = 0
    try:
        lock = client.lock(name, timeout=60)
        for _ in range(n):
            with lock:
                if raw("INCR", key) != 1:
                    overlaps += 1
                    raw("INCR", key + ":overlaps")
                time.sleep(0.002)
                raw("DECR", key)
            done += 1
    finally:
        raw.close()
        client.close()
    return done, overlaps


def test_two_workers_and_python_exclude_each_other(server, raw, make_nginx):
    ng = make_nginx(workers=2)
    requests, per_request, py_threads, per_thread = 16, 10, 2, 40
    with ThreadPoolExecutor(requests + py_threads) as pool:
        http = [pool.submit(ng.get, f"/critical?name=shared&key=inside&n={per_request}", 120)
                for _ in range(requests)]
        py = [pool.submit(python_critical, server.url, "shared", "inside", per_thread)
              for _ in range(py_threads)]
        answers = [fields(f.result()[1]) for f in http]
        py_results = [f.result() for f in py]
    assert all(a.get("done") == str(per_request) for a in answers), answers
    assert len({a["pid"] for a in answers}) == 2, "both workers took part"
    assert all(done == per_thread for done, _ in py_results)
    assert raw("GET", "inside:overlaps") is None, "two holders were inside at once"
    assert raw("GET", "inside") == b"0"
    assert all(a["overlaps"] == "0" for a in answers)


def test_hand_off_between_requests_is_woken_by_pubsub(server, raw, make_nginx):
    ng = make_nginx()
    latencies = []
    for _ in range(20):
        holder = {}
        t = threading.Thread(target=lambda holder=holder: holder.update(
            fields(ng.get("/hold?name=baton&secs=0.2")[1])))
        t.start()
        assert wait_for(lambda: raw("EXISTS", "baton") == 1, 5)
        waiter = fields(ng.get("/hold?name=baton&timeout=10")[1])
        t.join(10)
        assert waiter["acquired"] == "true" and holder["released"] == "true"
        # the holder's release started at `left`; the waiter had the lock at `got`
        latencies.append(float(waiter["got"]) - float(holder["left"]))
    p50 = statistics.median(latencies)
    print(f"hand-off wake-up: p50 {p50 * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
    assert p50 < 0.002, latencies
    assert min(latencies) >= 0
