"""Measure 6, the Python half: bytes per Lock object, and RSS over many acquire/release cycles.

    memory.py URL --objects N --cycles M --threads T

Bytes per Lock object: N `client.lock(name)` objects on N names, counted twice, in two passes
(tracemalloc's own tables are malloc'd, so it must not run while malloc is being counted):
  - Python objects: tracemalloc's traced bytes (the Lock and what it owns on the Python heap);
  - the core's handle behind it: glibc mallinfo2 (in-use plus mmapped bytes), through ctypes.
RSS: M acquire+release cycles (watchdog mode) split over T threads, each on its own lock,
with the process's resident set size sampled every M/50 cycles. Prints one JSON object.
"""

import argparse
import ctypes
import gc
import json
import os
import threading
import time
import tracemalloc

import redlease


class Mallinfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def c_heap():
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = Mallinfo2
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def per_lock_object(url, n):
    client = redlease.Client(url)
    names = [f"bench:mem:{i}" for i in range(n)]  # made before counting: not the lock's bytes
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    locks = [client.lock(name) for name in names]
    python_bytes = (tracemalloc.get_traced_memory()[0] - before) / n
    tracemalloc.stop()
    del locks
    gc.collect()
    before = c_heap()
    locks = [client.lock(name) for name in names]
    c_bytes = (c_heap() - before) / n
    del locks
    client.close()
    # the list holding them costs 8 bytes a lock: counted by tracemalloc, taken off here
    return {"objects": n, "python_bytes": python_bytes - 8, "core_bytes": c_bytes,
            "total_bytes": python_bytes - 8 + c_bytes}


def rss_over_cycles(url, cycles, threads):
    client = redlease.Client(url)
    per_thread = cycles // threads
    step = max(1, cycles // 50)
    done = [0] * threads
    samples = []
    stop = threading.Event()

    def worker(i):
        lock = client.lock(f"bench:rss:{i}")
        for k in range(per_thread):
            lock.acquire()
            lock.release()
            done[i] = k + 1

    def sampler():
        while not stop.is_set():
            samples.append((sum(done), rss_kb()))
            time.sleep(0.05)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    watcher = threading.Thread(target=sampler)
    start = time.perf_counter()
    watcher.start()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    stop.set()
    watcher.join()
    elapsed = time.perf_counter() - start
    total = per_thread * threads
    samples.append((total, rss_kb()))
    client.close()
    # thin to about one sample per `step` cycles
    thinned, next_at = [], 0
    for c, r in samples:
        if c >= next_at or c == total:
            thinned.append([c, r])
            next_at = c + step
    after_warmup = [r for c, r in thinned if c >= total * 0.1] or [thinned[-1][1]]
    return {"cycles": total, "threads": threads, "seconds": elapsed,
            "samples": thinned, "rss_start_kb": thinned[0][1],
            "rss_at_10pct_kb": after_warmup[0], "rss_end_kb": thinned[-1][1],
            "rss_max_kb": max(r for _, r in thinned),
            "growth_after_warmup_kb": thinned[-1][1] - after_warmup[0]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--objects", type=int, default=100000)
    p.add_argument("--cycles", type=int, default=1000000)
    p.add_argument("--threads", type=int, default=4)
    a = p.parse_args()
    row = {"impl": "redlease", "label": "redlease (Python)",
           "lock_object": per_lock_object(a.url, a.objects),
           "rss": rss_over_cycles(a.url, a.cycles, a.threads)}
    print(json.dumps({"measure": "memory-python", "rows": [row]}))


if __name__ == "__main__":
    main()
