"""The harness's steps for the lock family beyond locks (bench/run.py calls them): measure 2b,
redlease's Semaphore against Redisson's RSemaphore, each one command printing its rows."""


def semaphore(h, redisson):
    """Cycles per second and permit hand-off latency: bench/python/semaphore.py, and
    $BENCH_REDISSON semaphore (SemaphoreBench.java), with the sizes of measures 1 and 2."""
    p = h.p
    h.run("semaphore-redlease", "semaphore",
          h.py("semaphore.py", "--cycles", p["cycles"], "--seconds", p["cycle_seconds"],
               "--rounds", p["handoffs"]))
    if redisson:
        h.external(redisson, "semaphore", cycles=p["cycles"], seconds=p["cycle_seconds"],
                   rounds=p["handoffs"])
