"""Measure 8: asyncio locks. Each mode prints one JSON object ({"measure": ..., "rows": [...]}).

    asyncio_locks.py URL cycles IMPLS --bursts B --cycles N --seconds S
        One task, acquire (one try) + release, in B bursts per library taken in turn in one
        process; "redlease" is the blocking Python API in the same process (outside the loop),
        the row the asyncio one is compared with: each asyncio burst against the blocking burst
        just before it, the median of those ratios (of_blocking), so that a slow moment of the
        machine weighs on both sides of a pair. In the same bursts, the bare cycle made
        blocking and on the loop ("floor": aio_floor.py), what asyncio itself costs a cycle.
    asyncio_locks.py URL waiting IMPL --tasks N --seconds S
        N tasks, each waiting on its own lock, held by another owner (written straight into
        Redis), in a fresh process: the CPU the process and the loop's thread use while they
        wait (S seconds), and the memory (RSS) each waiting task adds.
    asyncio_locks.py URL handoff IMPL --rounds N
        Hand-off latency between two processes, as measure 2 (handoff.py), both on asyncio.
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.parse

from aio_floor import Floor
from aio_peers import AIO_IMPLS
from peers import IMPLS, version_of

SETTLE = 0.003
NAME = "bench:aio"


def row(cls, **values):
    return dict(impl=cls.name, label=cls.label, version=version_of(cls.dist), **values)


# ---- cycles -------------------------------------------------------------------------------

def sync_burst(lock, n, seconds):
    t0 = time.perf_counter()
    done = 0
    while done < n and time.perf_counter() - t0 < seconds:
        lock.acquire(0)
        lock.release()
        done += 1
    return done / (time.perf_counter() - t0)


async def aio_burst(lock, n, seconds):
    t0 = time.perf_counter()
    done = 0
    while done < n and time.perf_counter() - t0 < seconds:
        if not await lock.acquire(0):
            raise SystemExit("a one-try acquire of a free lock failed")
        await lock.release()
        done += 1
    return done / (time.perf_counter() - t0)


def cycles(url, names, bursts, n, seconds):
    loop = asyncio.new_event_loop()
    per = max(1, n // bursts)
    impls, rates = {}, {name: [] for name in names}
    where = urllib.parse.urlsplit(url)
    floor = Floor(where.hostname, where.port or 6379)  # the loop's own cost (aio_floor.py)
    loop.run_until_complete(floor.start())
    floor_rates = {"blocking": [], "asyncio": []}
    for name in names:
        if name in AIO_IMPLS:
            async def make(cls=AIO_IMPLS[name]):
                impl = cls(url)
                return impl, impl.lock(f"{NAME}:cycles:{cls.name}")
            impls[name] = loop.run_until_complete(make())
        else:
            impl = IMPLS[name](url)
            impls[name] = (impl, impl.lock(f"{NAME}:cycles:{name}"))
    for name, (_, lock) in impls.items():  # warm-up: connections, scripts, workers
        if name in AIO_IMPLS:
            loop.run_until_complete(aio_burst(lock, 200, 1.0))
        else:
            sync_burst(lock, 200, 1.0)
    floor.blocking_burst(200, 1.0)
    loop.run_until_complete(floor.asyncio_burst(200, 1.0))
    for _ in range(bursts):
        for name, (_, lock) in impls.items():
            if name in AIO_IMPLS:
                rates[name].append(loop.run_until_complete(aio_burst(lock, per, seconds / bursts)))
            else:
                rates[name].append(sync_burst(lock, per, seconds / bursts))
        floor_rates["blocking"].append(floor.blocking_burst(per, seconds / bursts))
        floor_rates["asyncio"].append(
            loop.run_until_complete(floor.asyncio_burst(per, seconds / bursts)))
    floor.close()
    rows = []
    for name, (impl, _) in impls.items():
        cls = AIO_IMPLS.get(name) or IMPLS[name]
        extra = {}
        if name in AIO_IMPLS and "redlease" in rates:  # each burst against the blocking one
            pairs = [a / b for a, b in zip(rates[name], rates["redlease"], strict=True)]
            extra = {"of_blocking": statistics.median(pairs), "bursts_of_blocking": pairs}
        rows.append(row(cls, cycles_per_s=statistics.median(rates[name]),
                        bursts_cycles_per_s=rates[name], **extra))
        if name in AIO_IMPLS:
            loop.run_until_complete(impl.close())
        else:
            impl.close()
    loop.close()
    floor_pairs = [a / b for a, b in zip(floor_rates["asyncio"], floor_rates["blocking"],
                                          strict=True)]
    return {"measure": "aio-cycles", "rows": rows,
            "floor": {**{k: {"cycles_per_s": statistics.median(v), "bursts_cycles_per_s": v}
                         for k, v in floor_rates.items()},
                      "of_blocking": statistics.median(floor_pairs),
                      "bursts_of_blocking": floor_pairs}}


# ---- many waiting tasks -------------------------------------------------------------------

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def waiting_main(url, name, tasks, seconds):
    import redis
    raw = redis.Redis.from_url(url)
    names = [f"{NAME}:wait:{i}" for i in range(tasks)]
    pipe = raw.pipeline(transaction=False)
    for key in names:  # held by another owner for the whole measure
        if name == "redlease-asyncio":
            pipe.hset(key, "00000000-0000-4000-8000-000000000000:1", 1)
            pipe.pexpire(key, 600000)
        else:
            pipe.set(key, "someone-else", px=600000)
    pipe.execute()
    cls = AIO_IMPLS[name]
    impl = cls(url, max_connections=64) if name == "redis-py-asyncio" else cls(url)
    locks = [impl.lock(key) for key in names]
    await asyncio.sleep(0.2)
    rss0 = rss_bytes()
    waiters = [asyncio.create_task(lock.acquire(None)) for lock in locks]
    if name == "redlease-asyncio":  # until every waiter is subscribed
        deadline = time.monotonic() + 60
        while impl.client.stats()["subscriptions"] < tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    await asyncio.sleep(2.0)
    rss1 = rss_bytes()
    cpu0, loop0, t0 = time.process_time(), time.thread_time(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu1, loop1, t1 = time.process_time(), time.thread_time(), time.monotonic()
    done = sum(w.done() for w in waiters)
    for w in waiters:
        w.cancel()
    # redis-py's cancelled waiters can take long to unwind, or never (wait_for would then wait
    # for the cancellation it asked for): the measure is taken already, so wait a bounded time
    # and leave the rest to the process's exit
    await asyncio.wait(waiters, timeout=10)
    await asyncio.wait([asyncio.ensure_future(impl.close())], timeout=10)
    raw.delete(*names)
    raw.close()
    wall = t1 - t0
    return {"measure": "aio-waiting", "rows": [row(
        cls, tasks=tasks, seconds=round(wall, 2), done_early=done,
        process_cpu_pct=100 * (cpu1 - cpu0) / wall, loop_cpu_pct=100 * (loop1 - loop0) / wall,
        rss_per_task_bytes=(rss1 - rss0) / tasks,
        note="64 pooled connections" if name == "redis-py-asyncio" else "")]}


# ---- hand-off between two processes --------------------------------------------------------

async def handoff_waiter(url, name):
    impl = AIO_IMPLS[name](url)
    lock = impl.lock(NAME)
    stdin = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    print("ready", flush=True)
    while (await stdin.readline()).strip() == b"go":
        if not await lock.acquire(None):
            raise SystemExit("waiter: acquire returned False")
        held_at = time.monotonic()
        await lock.release()
        print(repr(held_at), flush=True)
    await impl.close()


async def handoff(url, name, rounds):
    """One task holds and releases (a lock's owner is its task), the waiter likewise."""
    cls = AIO_IMPLS[name]
    impl = cls(url)
    lock = impl.lock(NAME)
    child = await asyncio.create_subprocess_exec(
        sys.executable, os.path.abspath(__file__), url, "handoff", name, "--waiter",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if (await child.stdout.readline()).strip() != b"ready":
        sys.exit("waiter did not start")
    latencies = []
    for i in range(rounds + 1):  # round 0 warms both sides up
        if not await lock.acquire(None):
            sys.exit("holder: acquire returned False")
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        await asyncio.sleep(SETTLE + random.uniform(0, cls.poll_interval))
        released_at = time.monotonic()
        await lock.release()
        line = await child.stdout.readline()
        if not line:
            sys.exit("waiter died")
        if i:
            latencies.append((float(line) - released_at) * 1e3)
    child.stdin.close()
    await child.wait()
    await impl.close()
    return {"measure": "aio-handoff", "rows": [row(cls, rounds=rounds,
                                                   latencies_ms=sorted(latencies))]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("mode", choices=["cycles", "waiting", "handoff"])
    p.add_argument("impls")
    p.add_argument("--bursts", type=int, default=8)
    p.add_argument("--cycles", type=int, default=16000)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--tasks", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=250)
    p.add_argument("--waiter", action="store_true")
    a = p.parse_args()
    if a.mode == "cycles":
        out = cycles(a.url, a.impls.split(","), a.bursts, a.cycles, a.seconds)
    elif a.mode == "waiting":
        loop = asyncio.new_event_loop()
        print(json.dumps(loop.run_until_complete(
            waiting_main(a.url, a.impls, a.tasks, a.seconds))), flush=True)
        os._exit(0)  # leftover peer tasks must not hold the process open
    elif a.waiter:
        return asyncio.run(handoff_waiter(a.url, a.impls))
    else:
        out = asyncio.run(handoff(a.url, a.impls, a.rounds))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
