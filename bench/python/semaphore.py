"""The semaphore rows: redlease's Semaphore (Python) against Redisson's RSemaphore (Java,
bench/redisson SemaphoreBench), measured the same way.

    semaphore.py URL --cycles N --seconds S --rounds R

- cycles: one thread, a semaphore of one permit, ``acquire(timeout=0)`` + ``release()`` (a try
  and a release: two round trips), N cycles or S seconds, after 50 warm-up cycles;
- hand-off: this process holds the only permit while a second process waits in ``acquire()``;
  the latency runs from just before this side's ``release()`` to the waiter's ``acquire()``
  returning (time.monotonic: CLOCK_MONOTONIC, one clock for both processes). The waiter is woken
  by the release's message on Redisson's channel (redisson_sc:{name}).

Prints one JSON object {"measure": "semaphore", "rows": [row]}.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from peers import version_of

CYCLES = "bench:semaphore:cycles:redlease"
HANDOFF = "bench:semaphore:handoff:redlease"
SETTLE = 0.003  # s between "start waiting" and the release: the waiter is blocked by then
WARMUP_ROUNDS = 10


def one_permit(client, name):
    sem = client.semaphore(name)  # the harness flushes Redis before each step
    if not sem.try_set_permits(1):
        sys.exit(f"try_set_permits(1) failed on {name}")
    return sem


def cycles(client, n, seconds):
    sem = one_permit(client, CYCLES)
    for _ in range(50):
        sem.acquire(timeout=0)
        sem.release()
    done, start = 0, time.perf_counter()
    deadline = start + seconds
    while done < n:
        for _ in range(100):
            if not sem.acquire(timeout=0):
                sys.exit("an uncontended acquire failed")
            sem.release()
        done += 100
        if time.perf_counter() > deadline:
            break
    return done, time.perf_counter() - start


def waiter(url):
    import redlease
    client = redlease.Client(url)
    sem = client.semaphore(HANDOFF)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        if not sem.acquire():
            sys.exit("waiter: acquire returned False")
        held_at = time.monotonic()
        sem.release()
        print(repr(held_at), flush=True)
    client.close()


def handoff(client, url, rounds):
    sem = one_permit(client, HANDOFF)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), url, "--waiter"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    if child.stdout.readline().strip() != "ready":
        sys.exit("waiter did not start")
    latencies = []
    for i in range(rounds + WARMUP_ROUNDS):
        if not sem.acquire():
            sys.exit("holder: acquire returned False")
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(SETTLE)
        released_at = time.monotonic()
        sem.release()
        line = child.stdout.readline()
        if not line:
            sys.exit("waiter died")
        if i >= WARMUP_ROUNDS:
            latencies.append((float(line) - released_at) * 1e3)
    child.stdin.close()
    child.wait()
    return sorted(latencies)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--cycles", type=int, default=16000)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--rounds", type=int, default=250)
    p.add_argument("--waiter", action="store_true")
    a = p.parse_args()
    if a.waiter:
        return waiter(a.url)
    import redlease
    client = redlease.Client(a.url)
    done, elapsed = cycles(client, a.cycles, a.seconds)
    latencies = handoff(client, a.url, a.rounds)
    client.close()
    row = {"impl": "redlease", "label": "redlease Semaphore (Python)",
           "version": version_of("redlease"), "cycles": done, "seconds": elapsed,
           "cycles_per_s": done / elapsed, "rounds": a.rounds, "warmup_rounds": WARMUP_ROUNDS,
           "latencies_ms": latencies}
    print(json.dumps({"measure": "semaphore", "rows": [row]}))


if __name__ == "__main__":
    main()
