"""Measure 4c: many threads waiting, the blocking API's counterpart of asyncio's waiting tasks.

    waiting_threads.py URL --threads N --seconds S

N Python threads of one process, each blocked in `acquire()` (no timeout) on a lock of its own,
held by another client of the process (another owner). Reported: the CPU the process uses while
they wait (S seconds; the core wakes nothing until a release), and the memory (RSS) each waiting
thread adds, its stack included (threads are started with a 256 KiB stack: 10,000 threads with
the default 8 MiB would reserve 80 GiB of address space). At the end the holder releases every
lock and each waiter takes its lock and releases it. Prints one JSON object.
"""

import argparse
import json
import os
import sys
import threading
import time

import redlease
from peers import version_of

STACK = 256 * 1024


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(url, n, seconds):
    holder, waiting = redlease.Client(url), redlease.Client(url)
    names = [f"bench:wait-threads:{i}" for i in range(n)]
    held = [holder.lock(name) for name in names]
    for lock in held:
        if not lock.acquire(blocking=False, lease=600):
            sys.exit("holder could not take a free lock")
    errors, woken = [], []

    def wait_on(lock):
        try:
            if lock.acquire():
                lock.release()
                woken.append(1)
        except Exception as e:  # noqa: BLE001 - reported, never hidden
            errors.append(repr(e))

    locks = [waiting.lock(name) for name in names]
    threading.stack_size(STACK)
    time.sleep(0.2)
    rss0 = rss_bytes()
    pool = [threading.Thread(target=wait_on, args=(lock,), daemon=True) for lock in locks]
    t_start = time.monotonic()
    for t in pool:
        t.start()
    deadline = time.monotonic() + 120
    while waiting.stats()["subscriptions"] < n and time.monotonic() < deadline:
        time.sleep(0.05)
    subscribed = waiting.stats()["subscriptions"]
    started_s = time.monotonic() - t_start
    time.sleep(min(2.0, seconds))  # every thread parked
    rss1 = rss_bytes()
    cpu0, t0 = time.process_time(), time.monotonic()
    time.sleep(seconds)
    cpu1, t1 = time.process_time(), time.monotonic()
    early = len(woken)
    for lock in held:
        lock.release()
    for t in pool:
        t.join(60)
    holder.close()
    waiting.close()
    if errors:
        sys.exit("; ".join(errors[:3]))
    wall = t1 - t0
    return {"impl": "redlease", "label": "redlease (threads)", "version": version_of("redlease"),
            "threads": n, "subscribed": subscribed, "start_s": round(started_s, 2),
            "seconds": round(wall, 2), "done_early": early, "woken_at_end": len(woken) - early,
            "process_cpu_pct": 100 * (cpu1 - cpu0) / wall,
            "rss_per_thread_bytes": (rss1 - rss0) / n, "stack_kib": STACK // 1024}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--threads", type=int, default=10000)
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    print(json.dumps({"measure": "wait-threads", "rows": [measure(a.url, a.threads, a.seconds)]}),
          flush=True)


if __name__ == "__main__":
    main()
