"""A plain asyncio worker pool sharing jobs through locks (redlease.asyncio).

Two pools of worker tasks, as two services would run them, go through one job list; each job
runs under its own lock, so it is done exactly once:

- a task that finds a job locked by another task waits on the event loop (woken by the
  release's pub/sub message, not by polling) and then skips it, since it is done;
- the loop keeps serving a heartbeat task every 10 ms the whole time: nothing blocks it;
- the long job outlives the lock's lease: the watchdog renews it.

Runs against $REDIS_URL, or a throwaway local redis-server when it is not set.
"""

import asyncio
import logging
import os
import sys
import time
from typing import Dict, List

from redlease.asyncio import Client
from redlease.testing import RedisServer

WATCHDOG_TIMEOUT = 3.0  # seconds of lease, renewed every second while a job runs
JOBS = [("invoice:1001", 0.3), ("invoice:1002", 0.3), ("report:monthly", 4.0),
        ("invoice:1003", 0.3), ("email:digest", 0.5)]


async def worker(client: Client, pool: str, n: int, done: Dict[str, str]) -> None:
    log = logging.getLogger(f"{pool}.{n}")
    for job, seconds in JOBS[n % len(JOBS):] + JOBS[:n % len(JOBS)]:
        async with client.lock(f"demo:async-job:{job}"):  # waits without blocking the loop
            if job in done:
                continue
            log.info("%s: running (%.1f s)", job, seconds)
            await asyncio.sleep(seconds)  # the work
            done[job] = f"{pool}.{n}"
            log.info("%s: done", job)


async def heartbeat(gaps: List[float]) -> None:
    last = time.monotonic()
    while True:
        await asyncio.sleep(0.01)
        now = time.monotonic()
        gaps.append(now - last)
        last = now


async def main(url: str) -> int:
    done: Dict[str, str] = {}
    gaps: List[float] = []
    beat = asyncio.create_task(heartbeat(gaps))
    # two clients: two services (or processes) sharing the jobs; each task is its own owner
    async with Client(url, watchdog_timeout=WATCHDOG_TIMEOUT) as a, \
            Client(url, watchdog_timeout=WATCHDOG_TIMEOUT) as b:
        await asyncio.gather(*(worker(a, "pool-a", n, done) for n in range(3)),
                             *(worker(b, "pool-b", n, done) for n in range(3, 6)))
    beat.cancel()
    logging.getLogger("demo").info("all %d jobs done once each: %s; the loop's longest pause "
                                   "was %.1f ms (heartbeat every 10 ms)", len(done),
                                   ", ".join(f"{j} by {w}" for j, w in sorted(done.items())),
                                   max(gaps, default=0) * 1000)
    return 0 if sorted(done) == sorted(job for job, _ in JOBS) else 1


def run() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, datefmt="%H:%M:%S",
                        format="%(asctime)s.%(msecs)03d %(name)-10s %(message)s")
    logging.getLogger("redlease").setLevel(logging.DEBUG)  # show the watchdog's renewals
    url = os.environ.get("REDIS_URL")
    if url:
        return asyncio.run(main(url))
    with RedisServer() as server:
        return asyncio.run(main(server.url))


if __name__ == "__main__":
    sys.exit(run())
