"""The OpenResty rows of `make bench`: requests/s with wrk through nginx (1 and 2 workers) for
an empty handler (the limit), one redlease lock cycle per request, one cycle of a polling
lock written the usual way (SET NX PX retried every 50 ms with ngx.sleep), and one cycle of
redlease's two scripts sent the polling lock's way (the bare format), each with the CPU
time the nginx workers spent per request; and hand-off latency between two nginx requests,
redlease (woken by pub/sub) against the polling lock. (bench/openresty/deployments.py: the same
rows against Sentinel and Cluster.) The three locks are measured in --rounds alternated rounds:
a row keeps the median and each round's requests/s, so that redlease and the polling lock can be
compared round by round (a slow moment of the machine weighs on both of a round's runs).

    python bench/openresty/run.py REDIS_URL [--seconds 5] [--connections 32] [--handoffs 50]
        [--rounds 3]

Prints one JSON object: {"measure": "openresty", "rows": [...]}."""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "openresty"))

from nginx import Nginx  # noqa: E402  (the suite's throwaway nginx)

HTTP = """
  init_worker_by_lua_block { require("bench_app").init("{redis}") }
"""
LOCATIONS = """
    location = /empty { content_by_lua_block { require("bench_app").empty() } }
    location = /redlease { content_by_lua_block { require("bench_app").redlease_cycle() } }
    location = /polling { content_by_lua_block { require("bench_app").polling_cycle() } }
    location = /bare { content_by_lua_block { require("bench_app").bare_cycle() } }
    location = /handoff { content_by_lua_block { require("bench_app").handoff() } }
"""


# the locks measured in each round, in this order
LOCKS = (("redlease", "/redlease"), ("polling", "/polling"), ("bare", "/bare"))


def wrk(port, path, seconds, connections):
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
                          f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{path}: {errors.group(1)} failed requests\n{out}")
    return rps


def cpu_seconds(pids):
    """User + system CPU seconds the processes `pids` have used so far (/proc/PID/stat)."""
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read().rsplit(")", 1)[1].split()  # utime, stime: fields 14, 15
        total += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measured(ng, path, seconds, connections):
    """One wrk run: {"requests_per_s", "worker_cpu_us"}, the second being the CPU µs the nginx
    workers spent per request (from /proc: what other processes take from the machine does not
    count in it; ticks of 10 ms, so a short run's figure is coarse)."""
    workers = ng.worker_pids()
    before = cpu_seconds(workers)
    rps = wrk(ng.port, path, seconds, connections)
    used = cpu_seconds(workers) - before
    return {"requests_per_s": rps, "worker_cpu_us": round(used / (rps * seconds) * 1e6, 1)}


def fields(body):
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line)


def handoffs(ng, impl, rounds):
    """Each round: a holder keeps the lock 50 ms; a waiter asks meanwhile; latency = the
    waiter's acquire time minus the holder's release start (clock_gettime, microseconds)."""
    out = []
    for i in range(rounds):
        name = f"handoff:{impl}:{i}"
        holder = {}
        t = threading.Thread(target=lambda holder=holder, name=name: holder.update(
            fields(ng.get(f"/handoff?impl={impl}&name={name}&secs=0.05")[1])))
        t.start()
        time.sleep(random.uniform(0.005, 0.045))  # any phase of the polling loop
        waiter = fields(ng.get(f"/handoff?impl={impl}&name={name}&secs=0")[1])
        t.join(30)
        out.append(round((float(waiter["got"]) - float(holder["left"])) * 1000, 3))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("url")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--handoffs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    seconds = max(1, int(round(a.seconds)))
    rows = []
    for workers in (1, 2):
        ng = Nginx(a.url, http_block=HTTP, server_block=LOCATIONS, workers=workers,
                   log_level="warn", lua_dir=HERE).start()
        try:
            for path in ("/empty", "/redlease", "/polling", "/bare"):
                wrk(ng.port, path, 1, a.connections)  # warm-up: pools, JIT
            rows.append({"kind": "rps", "impl": "empty", "workers": workers,
                         "connections": a.connections, "seconds": seconds,
                         **measured(ng, "/empty", seconds, a.connections)})
            rounds = {impl: [] for impl, _ in LOCKS}
            for _ in range(a.rounds):
                for impl, path in LOCKS:
                    rounds[impl].append(measured(ng, path, seconds, a.connections))
            for impl, runs in rounds.items():
                rows.append({"kind": "rps", "impl": impl, "workers": workers,
                             "connections": a.connections, "seconds": seconds,
                             "requests_per_s": statistics.median(
                                 r["requests_per_s"] for r in runs),
                             "worker_cpu_us": statistics.median(r["worker_cpu_us"] for r in runs),
                             "rounds_requests_per_s": [r["requests_per_s"] for r in runs]})
            if workers == 1:
                for impl in ("redlease", "polling"):
                    rows.append({"kind": "handoff", "impl": impl, "workers": 1,
                                 "latencies_ms": handoffs(ng, impl, a.handoffs)})
        finally:
            ng.close()
    print(json.dumps({"measure": "openresty", "poll_step_s": 0.05, "rows": rows}))


if __name__ == "__main__":
    main()
