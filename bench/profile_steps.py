"""The harness's step for the profile of measure 1 (bench/run.py calls it): one cycle's system
calls, task switches and CPU by `perf stat`, for the wire's limits, this core, the core of
BENCH_BEFORE (mk/bench.mk) and the Python binding: bench/python/perf_cycles.py."""

import os

PROFILE_SIZES = {"full": dict(cycles=8000, repeats=3), "smoke": dict(cycles=1000, repeats=1)}


def profile(h, size):
    s = PROFILE_SIZES[size]
    before = h.bins["before"]
    rev_file = os.path.join(os.path.dirname(before), "rev")
    args = ["--limits", h.bins["limits"], "--loop", h.bins["cycle_loop"],
            "--cycles", s["cycles"], "--repeats", s["repeats"]]
    if os.path.exists(before) and os.path.exists(rev_file):
        with open(rev_file) as f:
            args += ["--before", before, "--before-rev", f.read().strip()]
    h.run("profile", "profile", h.py("perf_cycles.py", *args))
