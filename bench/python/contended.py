"""Measure 3: contended throughput and fairness on one lock.

    contended.py URL IMPL --workers W --procs P --seconds S

W workers (threads) spread over P processes all loop on one lock name: acquire (waiting as
long as needed), note (time, worker) inside the critical section, note the time again just
before the release, release. The critical sections are serialised by the lock itself, so
sorting every note by CLOCK_MONOTONIC (one clock for all processes) gives the order in which the
lock went round. Reported: acquisitions and hand-offs per second (a hand-off is an acquisition
by another worker than the previous one), the fewest and most acquisitions of one worker, and
the hand-offs' latencies (from the previous holder's release call to the next holder's acquire
returning: p50, p90, p99). Prints one JSON object.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
import time

from peers import IMPLS, version_of

NAME = "bench:contended"


def child(url, impl_name, first_worker, threads):
    impl = IMPLS[impl_name](url)
    print("ready", flush=True)
    start, end = map(float, sys.stdin.readline().split())
    notes = {first_worker + i: [] for i in range(threads)}
    errors = []

    def worker(wid):
        try:
            lock = impl.lock(NAME)
            mine = notes[wid]
            while True:
                now = time.monotonic()
                if now >= end:
                    return
                if now < start:
                    time.sleep(start - now)
                    continue
                if not lock.acquire(end - now):
                    continue
                acquired = time.monotonic()
                mine.append((acquired, time.monotonic()))
                lock.release()
        except Exception as e:
            errors.append(repr(e))

    pool = [threading.Thread(target=worker, args=(w,)) for w in notes]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    impl.close()
    if errors:
        sys.exit("; ".join(errors[:3]))
    print(json.dumps({str(w): v for w, v in notes.items()}), flush=True)


def run(url, impl_name, workers, procs, seconds):
    procs = min(procs, workers)
    share = [workers // procs + (i < workers % procs) for i in range(procs)]
    children, first = [], 0
    for n in share:
        children.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), url, impl_name, "--child", str(first),
             str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        first += n
    for c in children:
        if c.stdout.readline().strip() != "ready":
            sys.exit("a worker process did not start")
    start = time.monotonic() + 0.2
    end = start + seconds
    for c in children:
        c.stdin.write(f"{start!r} {end!r}\n")
        c.stdin.flush()
    notes = {}
    for c in children:
        out, _ = c.communicate(timeout=seconds + 60)
        if c.returncode != 0:
            sys.exit(f"a worker process failed ({c.returncode})")
        notes.update({int(w): v for w, v in json.loads(out).items()})
    order = sorted((t, r, w) for w, ts in notes.items() for t, r in ts if t < end)
    latencies = sorted((b[0] - a[1]) * 1e3 for a, b in itertools.pairwise(order) if a[2] != b[2])
    handoffs = len(latencies)
    per_worker = [sum(1 for t, _ in notes[w] if t < end) for w in sorted(notes)]

    def pct(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None
    cls = IMPLS[impl_name]
    return {"impl": cls.name, "label": cls.label, "version": version_of(cls.dist),
            "workers": workers, "procs": procs, "seconds": seconds,
            "acquisitions": len(order), "acquisitions_per_s": len(order) / seconds,
            "handoffs": handoffs, "handoffs_per_s": handoffs / seconds,
            "per_worker_min": min(per_worker), "per_worker_max": max(per_worker),
            "per_worker": per_worker, "handoff_p50_ms": pct(0.5), "handoff_p90_ms": pct(0.9),
            "handoff_p99_ms": pct(0.99)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("impl", choices=sorted(IMPLS))
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--child", nargs=2, type=int, metavar=("FIRST", "THREADS"))
    a = p.parse_args()
    if a.child:
        child(a.url, a.impl, *a.child)
    else:
        row = run(a.url, a.impl, a.workers, a.procs, a.seconds)
        print(json.dumps({"measure": "contended", "rows": [row]}))


if __name__ == "__main__":
    main()
