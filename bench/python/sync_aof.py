"""What sync_aof costs: acquire + release cycles of one thread against Valkey 8 with its
append-only file, for `appendfsync always` and `everysec`, with and without sync_aof. Not a step
of `make bench` (it needs Valkey, not the page's server); run it alone:

    build/venv/bin/python bench/python/sync_aof.py [cycles]
"""

import os
import subprocess
import sys
import time

import redlease
from redlease.testing import RedisServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def valkey():
    folder = subprocess.run([os.path.join(ROOT, "scripts", "fetch-servers"), "valkey8"],
                            check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(folder, "valkey-server")


def cycles(url, sync_aof, n):
    client = redlease.Client(url, sync_aof=sync_aof, sync_timeout=2)
    lock = client.lock("bench:sync_aof")
    lock.acquire()
    lock.release()
    took = []
    for _ in range(n):
        start = time.perf_counter()
        lock.acquire()
        lock.release()
        took.append(time.perf_counter() - start)
    client.close()
    took.sort()
    return took[len(took) // 2], took[int(len(took) * 0.99)]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    program = valkey()
    for fsync in ("always", "everysec"):
        with RedisServer(program, ["--appendonly", "yes", "--appendfsync", fsync]) as server:
            for sync_aof in (False, True):
                p50, p99 = cycles(server.url, sync_aof, n)
                print(f"appendfsync {fsync:<8} sync_aof={str(sync_aof):<5} {n} cycles: "
                      f"p50 {p50 * 1000:.3f} ms, p99 {p99 * 1000:.3f} ms")


if __name__ == "__main__":
    main()
