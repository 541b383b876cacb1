"""Measures 1 and 1b: uncontended acquire+release cycles per second.

    cycles.py URL IMPL --threads 1 --cycles N --seconds S    (measure 1: one thread, one lock)
    cycles.py URL IMPL --threads 16 --seconds S              (measure 1b: 16 threads, own locks)
    cycles.py URL IMPL,IMPL,... --paired B --cycles N --seconds S

--paired (measure 1 as the harness runs it): every implementation given, in one process, in B
bursts of N/B cycles each; each burst of each implementation runs between two bursts of the
bare hiredis script loop (build/bench_bare.so, bench/c/bare_loop.c, through ctypes), and each
burst of the bare loop follows a burst of PINGs. A row reports its median rate and the median
of its ratios to the bare loop around it and to the PINGs before it: on a machine whose speed
changes from one second to the next, the ratios stay steady where long runs would not.

One thread runs N cycles or stops after S seconds, whichever comes first (a slow peer is not
given minutes). With several threads, each cycles on its own lock name for S seconds after a
common start, and the aggregate is the total over the elapsed time. Prints one JSON object.
"""

import argparse
import json
import statistics
import sys
import threading
import time

import bare
from peers import IMPLS, version_of


def one_thread(impl, cycles, seconds, lock=None):
    if lock is None:
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


def paired(url, names, cycles, bursts, seconds):
    wire = bare.loop(url)
    ping, scripts = wire.ping, wire.scripts
    n = max(1, cycles // bursts)
    impls = [IMPLS[name](url) for name in names]
    locks = []
    for impl in impls:
        lock = impl.lock(f"bench:cycles:{impl.name}")
        for _ in range(50):  # warm up: connections, script loading
            lock.acquire(0) or sys.exit("warm-up acquire failed")
            lock.release()
        locks.append(lock)
    scripts(200)
    rates = {name: [] for name in names}
    of_bare = {name: [] for name in names}
    of_ping = {name: [] for name in names}
    limits = {"ping": [], "bare-scripts": []}
    for _ in range(bursts):
        two_pings = ping(n) / 2
        before = scripts(n)
        limits["ping"].append(two_pings)
        limits["bare-scripts"].append(before)
        for name, impl, lock in zip(names, impls, locks, strict=True):
            rate = one_thread(impl, n, seconds / bursts, lock)["cycles_per_s"]
            after = scripts(n)
            rates[name].append(rate)
            of_bare[name].append(rate / ((before + after) / 2))
            of_ping[name].append(rate / two_pings)
            before = after
    rows = []
    for name, impl in zip(names, impls, strict=True):
        cls = IMPLS[name]
        rows.append({"impl": cls.name, "label": cls.label, "version": version_of(cls.dist),
                     "threads": 1, "cycles_per_s": statistics.median(rates[name]),
                     "of_bare": statistics.median(of_bare[name]),
                     "of_ping": statistics.median(of_ping[name]),
                     "rounds_cycles_per_s": rates[name], "rounds_of_bare": of_bare[name]})
        impl.close()
    for impl_name, label in (("bare-scripts", "bare script loop (beside the Python rows)"),
                             ("ping", "two PINGs (beside the Python rows)")):
        rows.append({"impl": impl_name, "label": label,
                     "cycles_per_s": statistics.median(limits[impl_name]),
                     "rounds_cycles_per_s": limits[impl_name]})
    return {"measure": "cycles", "cycles": cycles, "bursts": bursts, "rows": rows}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("impl", help="one of " + ", ".join(sorted(IMPLS)) + " (--paired: a list)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cycles", type=int, default=20000)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--paired", type=int, metavar="BURSTS")
    a = p.parse_args()
    if a.paired:
        print(json.dumps(paired(a.url, a.impl.split(","), a.cycles, a.paired, a.seconds)))
        return
    if a.impl not in IMPLS:
        sys.exit(f"unknown implementation {a.impl}")
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
