"""Python figures: acquire+release cycles per second for redlease and redis-py's Lock, with a
PING loop beside them, one thread, on one server. Also Ctrl-C latency of a blocked acquire.

Usage: python bench_cycles.py REDIS_URL [cycles]
redis-py is installed for the benchmark only (make bench); it is not a dependency of redlease.
"""

import signal
import statistics
import subprocess
import sys
import textwrap
import time

import redlease


def rate(n, fn):
    fn()  # warm up: connections, script loading
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def redlease_cycle(lock, lease):
    def cycle():
        lock.acquire(lease=lease)
        lock.release()
    return cycle


def redis_py_rates(url, n):
    try:
        import redis
    except ImportError:
        return None
    r = redis.Redis.from_url(url)
    lock = r.lock("bench:redis-py", timeout=30)

    def cycle():
        lock.acquire(blocking=False)
        lock.release()

    return {"PING (redis-py)": rate(n, r.ping), "redis-py Lock": rate(n, cycle)}


CTRL_C_CHILD = textwrap.dedent("""
    import sys, time, redlease
    lock = redlease.Client(sys.argv[1]).lock("bench:ctrl-c")
    print("waiting", flush=True)
    try:
        lock.acquire()
    except KeyboardInterrupt:
        print(time.monotonic(), flush=True)
""")


def ctrl_c_latency(url, tries=10):
    holder = redlease.Client(url)
    holder.lock("bench:ctrl-c").acquire()
    latencies = []
    for _ in range(tries):
        child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, url], stdout=subprocess.PIPE,
                                 text=True)
        child.stdout.readline()
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        latencies.append(float(child.stdout.readline()) - sent)
        child.wait()
    holder.close()
    return latencies


def main():
    url = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    client = redlease.Client(url)
    lock = client.lock("bench:python")
    rows = {
        "redlease Python, watchdog": rate(n, redlease_cycle(lock, None)),
        "redlease Python, fixed lease": rate(n, redlease_cycle(lock, 30.0)),
    }
    rows.update(redis_py_rates(url, n) or {})
    client.close()
    print(f"python {sys.version.split()[0]}, {n} cycles each, one thread")
    for name, value in rows.items():
        print(f"  {name:32s} {value:10,.0f} /s")
    if "redis-py Lock" in rows:
        ratio = rows["redlease Python, watchdog"] / rows["redis-py Lock"]
        print(f"  redlease (watchdog) / redis-py Lock: {ratio:.2f}")
    lat = ctrl_c_latency(url)
    print(f"Ctrl-C in a blocked acquire -> KeyboardInterrupt: median "
          f"{statistics.median(lat) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms ({len(lat)} tries)")


if __name__ == "__main__":
    sys.exit(main())
