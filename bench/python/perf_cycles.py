"""The profile of measure 1: what one acquire+release cycle costs, by `perf stat`.

    perf_cycles.py URL --limits BIN --loop BIN [--before BIN] --cycles N --repeats K

Each row is a program that runs cycles and nothing else: the wire's limits (bench_limits in its
ping and scripts modes: two PINGs, and redlease's two scripts in a bare hiredis loop), the C
core (cycle_loop, fixed lease and watchdog), the same loop built against an earlier core
(--before), and the Python binding (watchdog mode, the default). Each runs under
`perf stat -e task-clock,context-switches,raw_syscalls:sys_enter` twice, with N and with 2N
cycles; the difference over N is one cycle's cost with the start-up (process, interpreter,
connection, script loading) cancelled out: system calls and task switches of the client (every
thread), the client's CPU, and Redis's CPU (`INFO cpu`, user + system, around each run). The
rows go round K times, in turn; each figure is the median of its K. Prints one JSON object.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import redis

EVENTS = ("task-clock", "context-switches", "raw_syscalls:sys_enter")
PYTHON_LOOP = """
import sys, redlease
n = int(sys.argv[2])
with redlease.Client(sys.argv[1]) as client:
    lock = client.lock("bench:profile")
    for _ in range(n):
        lock.acquire()
        lock.release()
"""


def rows(a):
    """(impl, label, command for n cycles)"""
    out = [("ping", "two PING round trips (bare hiredis)",
            lambda n: [a.limits, a.url, 2 * n, "ping"]),
           ("bare-scripts", "acquire + release scripts (bare hiredis loop)",
            lambda n: [a.limits, a.url, n, "scripts"])]
    for mode, label in (("fixed", "fixed lease"), ("watchdog", "watchdog")):
        if a.before:
            out.append((f"redlease-c-{mode}-before",
                        f"redlease C, {label}, before ({a.before_rev})",
                        lambda n, m=mode: [a.before, a.url, n, m]))
        out.append((f"redlease-c-{mode}", f"redlease C, {label}",
                    lambda n, m=mode: [a.loop, a.url, n, m]))
    out.append(("redlease-python", "redlease (Python), watchdog",
                lambda n: [sys.executable, "-c", PYTHON_LOOP, a.url, n]))
    return out


def redis_cpu_s(r):
    info = r.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def perf_run(cmd, r):
    """{event: count} of one run under perf stat, with its wall seconds and Redis's CPU."""
    with tempfile.NamedTemporaryFile("r", suffix=".csv") as out:
        cpu0, t0 = redis_cpu_s(r), time.monotonic()
        proc = subprocess.run(["perf", "stat", "-x", ",", "-o", out.name,
                               "-e", ",".join(EVENTS), "--", *map(str, cmd)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall, cpu1 = time.monotonic() - t0, redis_cpu_s(r)
        if proc.returncode != 0:
            sys.exit(f"{cmd[0]} under perf stat: exit {proc.returncode}: {proc.stderr[-300:]}")
        counts = {}
        for line in out.read().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2] in EVENTS:
                if not fields[0] or fields[0].startswith("<"):  # <not supported>, <not counted>
                    sys.exit(f"perf stat could not count {fields[2]}: {line}")
                counts[fields[2]] = float(fields[0])
    missing = [e for e in EVENTS if e not in counts]
    if missing:
        sys.exit("perf stat gave no count for " + ", ".join(missing))
    counts["wall_s"], counts["redis_cpu_s"] = wall, cpu1 - cpu0
    return counts


def per_cycle(small, big, n):
    d = {k: (big[k] - small[k]) / n for k in big}
    return {"syscalls": d["raw_syscalls:sys_enter"], "task_switches": d["context-switches"],
            "client_cpu_us": d["task-clock"] * 1e3,  # task-clock counts milliseconds
            "redis_cpu_us": d["redis_cpu_s"] * 1e6,
            "cycles_per_s": 1 / d["wall_s"] if d["wall_s"] > 0 else None}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--limits", required=True, help="bench_limits")
    p.add_argument("--loop", required=True, help="cycle_loop of this core")
    p.add_argument("--before", help="cycle_loop built against an earlier core")
    p.add_argument("--before-rev", default="earlier core")
    p.add_argument("--cycles", type=int, default=8000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    if a.before and not os.path.exists(a.before):
        sys.exit(f"no {a.before}")
    r = redis.Redis.from_url(a.url)
    table = rows(a)
    seen = {impl: [] for impl, _, _ in table}
    for _ in range(a.repeats):
        for impl, _, cmd in table:
            small = perf_run(cmd(a.cycles), r)
            big = perf_run(cmd(2 * a.cycles), r)
            seen[impl].append(per_cycle(small, big, a.cycles))
    out = []
    for impl, label, _ in table:
        runs = seen[impl]
        row = {"impl": impl, "label": label, "runs": runs}
        for k in runs[0]:
            vals = [x[k] for x in runs if x[k] is not None]
            row[k] = statistics.median(vals) if vals else None
        out.append(row)
    print(json.dumps({"measure": "profile", "cycles": a.cycles, "repeats": a.repeats,
                      "events": list(EVENTS), "rows": out}))


if __name__ == "__main__":
    main()
