"""Measures 1 and 1b: uncontended acquire+release cycles per second.

    cycles.py URL IMPL --threads 1 --cycles N --seconds S    (measure 1: one thread, one lock)
    cycles.py URL IMPL --threads 16 --seconds S              (measure 1b: 16 threads, own locks)

One thread runs N cycles or stops after S seconds, whichever comes first (a slow peer is not
given minutes). With several threads, each cycles on its own lock name for S seconds after a
common start, and the aggregate is the total over the elapsed time. Prints one JSON object.
"""

import argparse
import json
import sys
import threading
import time

from peers import IMPLS, version_of


def one_thread(impl, cycles, seconds):
    lock = impl.lock("bench:cycles")
    for _ in range(50):  # warm up: connections, script loading
        lock.acquire(0) or sys.exit("warm-up acquire failed")
        lock.release()
    done, start = 0, time.perf_counter()
    deadline = start + seconds
    while done < cycles:
        for _ in range(100):
            if not lock.acquire(0):
                sys.exit("an uncontended acquire failed")
            lock.release()
        done += 100
        if time.perf_counter() > deadline:
            break
    elapsed = time.perf_counter() - start
    return {"cycles": done, "seconds": elapsed, "cycles_per_s": done / elapsed}


def many_threads(impl, threads, seconds):
    counts = [0] * threads
    errors = []
    ready = threading.Barrier(threads + 1)
    stop = threading.Event()

    def worker(i):
        try:
            lock = impl.lock(f"bench:parallel:{i}")
            for _ in range(20):
                lock.acquire(0)
                lock.release()
            ready.wait()
            n = 0
            while not stop.is_set():
                if not lock.acquire(0):
                    raise RuntimeError("an uncontended acquire failed")
                lock.release()
                n += 1
            counts[i] = n
        except Exception as e:  # reported, and the run fails
            errors.append(repr(e))
            ready.abort()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    ready.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        sys.exit("; ".join(errors))
    total = sum(counts)
    return {"cycles": total, "seconds": elapsed, "cycles_per_s": total / elapsed,
            "per_thread_min": min(counts), "per_thread_max": max(counts)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("impl", choices=sorted(IMPLS))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cycles", type=int, default=20000)
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    cls = IMPLS[a.impl]
    impl = cls(a.url)
    if a.threads == 1:
        row = one_thread(impl, a.cycles, a.seconds)
    else:
        row = many_threads(impl, a.threads, a.seconds)
    impl.close()
    row.update(impl=cls.name, label=cls.label, version=version_of(cls.dist), threads=a.threads)
    print(json.dumps({"measure": "cycles" if a.threads == 1 else "parallel", "rows": [row]}))


if __name__ == "__main__":
    main()
