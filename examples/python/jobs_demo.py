"""Two worker processes share one job list; each job runs under its own lock.

- a job is done once, by whichever worker locks it first;
- the long job outlives the lock's lease: the watchdog renews it (see the "renewed" log lines);
- a worker that finds a job locked waits for it, is woken by the release, and skips it because
  it is done.

Runs against $REDIS_URL, or a throwaway local redis-server when it is not set.
"""

import logging
import multiprocessing
import os
import sys
import tempfile
import time

import redlease
from redlease.testing import RedisServer

WATCHDOG_TIMEOUT = 3.0  # seconds of lease, renewed every second while a job runs
JOBS = [("invoice:1001", 0.3), ("invoice:1002", 0.3), ("report:monthly", 5.0),
        ("invoice:1003", 0.3), ("email:digest", 0.5)]


def run_job(done_dir: str, worker: str, job: str, seconds: float) -> None:
    log = logging.getLogger("jobs")
    marker = os.path.join(done_dir, job.replace(":", "_"))
    if os.path.exists(marker):
        log.info("%s: already done by %s", job, open(marker).read())
        return
    log.info("%s: running (%.1f s)", job, seconds)
    time.sleep(seconds)
    with open(marker, "w") as f:
        f.write(worker)
    log.info("%s: done", job)


def worker(url: str, done_dir: str, name: str, start_delay: float) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, datefmt="%H:%M:%S",
                        format=f"%(asctime)s.%(msecs)03d {name} %(name)-8s %(message)s")
    logging.getLogger("redlease").setLevel(logging.DEBUG)  # show the watchdog's renewals
    log = logging.getLogger("jobs")
    time.sleep(start_delay)
    with redlease.Client(url, watchdog_timeout=WATCHDOG_TIMEOUT) as client:
        later: list[str] = []
        for job, seconds in JOBS:
            lock = client.lock(f"demo:job:{job}")
            if lock.acquire(timeout=0):  # one try: take another job rather than wait now
                try:
                    run_job(done_dir, name, job, seconds)
                finally:
                    lock.release()
            else:
                log.info("%s: locked by the other worker, coming back later", job)
                later.append(job)
        for job in later:
            lock = client.lock(f"demo:job:{job}", timeout=30)
            if not lock.acquire(timeout=0):
                log.info("%s: still locked, waiting for the release", job)
                start = time.monotonic()
                lock.acquire()  # sleeps until the holder's release wakes it (pub/sub)
                log.info("%s: woken by the release after %.2f s", job, time.monotonic() - start)
            try:
                run_job(done_dir, name, job, dict(JOBS)[job])
            finally:
                lock.release()


def main() -> None:
    url = os.environ.get("REDIS_URL")
    server = None
    if not url:
        server = RedisServer().start()
        url = server.url
        print(f"demo: throwaway redis-server at {url}", flush=True)
    try:
        with tempfile.TemporaryDirectory() as done_dir:
            ctx = multiprocessing.get_context("spawn")
            workers = [ctx.Process(target=worker, args=(url, done_dir, "worker-1", 0.0)),
                       ctx.Process(target=worker, args=(url, done_dir, "worker-2", 0.5))]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            done = sorted(os.listdir(done_dir))
            print(f"demo: {len(done)} of {len(JOBS)} jobs done, each once")
            ok = len(done) == len(JOBS) and all(w.exitcode == 0 for w in workers)
    finally:
        if server:
            server.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
