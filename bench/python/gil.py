"""Measure 5: GIL friendliness.

    gil.py URL IMPL --waiters 1,8,32 --seconds S

A CPU-bound Python thread counts loop iterations for S seconds: first alone, then while N other
threads of the same process wait on locks that a second client of this process holds (each
waiter on its own lock). A library that waits with the GIL released leaves the counting thread
alone; one that polls takes the GIL back at each poll. Reported: iterations per second with N
waiters as a fraction of the solo rate, where the solo rate is the mean of a solo run just before
and one just after (the machine's speed drifts; the pairs keep it out of the ratio). Prints one
JSON object.
"""

import argparse
import json
import sys
import threading
import time

from peers import IMPLS, version_of


def spin(seconds):
    """Iterations of a pure-Python loop per second, over `seconds`."""
    n, start = 0, time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(10000):
            n += 1
        if time.perf_counter() >= end:
            break
    return n / (time.perf_counter() - start)


def with_waiters(cls, url, waiters, seconds):
    holder, waiting = cls(url), cls(url)  # two clients: two owners whatever the library
    names = [f"bench:gil:{waiters}:{i}" for i in range(waiters)]
    held = [holder.lock(n) for n in names]
    for lock in held:
        if not lock.acquire(0):
            sys.exit("holder could not take a free lock")
    started = threading.Barrier(waiters + 1)
    errors = []

    def wait_on(name):
        try:
            lock = waiting.lock(name)
            started.wait()
            if lock.acquire(None):
                lock.release()
        except Exception as e:
            errors.append(repr(e))

    pool = [threading.Thread(target=wait_on, args=(n,)) for n in names]
    for t in pool:
        t.start()
    started.wait()
    time.sleep(0.3)  # every waiter is blocked in acquire by now
    rate = spin(seconds)
    for lock in held:
        lock.release()
    for t in pool:
        t.join()
    holder.close()
    waiting.close()
    if errors:
        sys.exit("; ".join(errors[:3]))
    return rate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("impl", choices=sorted(IMPLS))
    p.add_argument("--waiters", default="1,8,32")
    p.add_argument("--seconds", type=float, default=2.0)
    a = p.parse_args()
    cls = IMPLS[a.impl]
    spin(0.2)  # warm up
    solos, points = [spin(a.seconds)], []
    for n in (int(x) for x in a.waiters.split(",")):
        rate = with_waiters(cls, a.url, n, a.seconds)
        solos.append(spin(a.seconds))
        solo = (solos[-2] + solos[-1]) / 2
        points.append({"waiters": n, "rate": rate, "solo_rate": solo, "fraction": rate / solo})
    row = {"impl": cls.name, "label": cls.label, "version": version_of(cls.dist),
           "solo_rates": solos, "points": points}
    print(json.dumps({"measure": "gil", "rows": [row]}))


if __name__ == "__main__":
    main()
