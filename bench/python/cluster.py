"""Measure 4b: redlease on a local Redis Cluster (3 masters, no replicas, started here on free
loopback ports) against one node (the harness's redis-server, URL given).

    python bench/python/cluster.py URL --parallel-bin build/bench_parallel --threads 16
        --seconds 3 --holds 100000 --wd-timeout-ms 6000 --periods 3

Per target ("one node", "cluster"): 16-thread acquire+release cycles (bench_parallel, the C core,
names spread over the masters), and the watchdog over `holds` holds (one Python client): its
rounds' wall time (the core's statistics), round trips per round and nodes per round, and each
node's own time per round (INFO commandstats: the renewal script's microseconds at that node,
per round). On a 2-core machine the cluster's nodes share the cores with the client, so
throughput cannot scale; what the rows show is that a round's nodes work at the same time: the
round takes about the slowest node's time, not the sum. Prints one JSON object."""

import argparse
import json
import os
import subprocess
import sys
import time

import redlease
from redlease.testing import RedisCluster


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          timeout=30).stdout


def script_usec(port):
    """Microseconds the node spent in EVALSHA so far (INFO commandstats)."""
    for line in cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_evalsha:"):
            fields = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
            return int(fields["usec"])
    return 0


def parallel(binary, url, threads, seconds):
    out = subprocess.run([binary, url, str(threads), str(seconds), str(threads), "-1"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    return json.loads(out)["rows"][0]


def watchdog(url, ports, holds, timeout_ms, periods):
    c = redlease.Client(url, watchdog_timeout=timeout_ms / 1000)
    try:
        locks = [c.lock(f"bench:cluster:{i}") for i in range(holds)]
        for lock in locks:
            lock.acquire(timeout=0)
        deadline = time.monotonic() + 120
        while c.stats()["last_round_holds"] != holds and time.monotonic() < deadline:
            time.sleep(0.05)
        before, usec_before = c.stats(), [script_usec(p) for p in ports]
        while (c.stats()["renew_rounds"] < before["renew_rounds"] + periods
               and time.monotonic() < deadline):
            time.sleep(0.05)
        after, usec_after = c.stats(), [script_usec(p) for p in ports]
        rounds = max(1, after["renew_rounds"] - before["renew_rounds"])
        for lock in locks:
            lock.release()
        node_ms = [(b - a) / 1000 / rounds for a, b in zip(usec_before, usec_after, strict=True)]
        return {"holds": holds, "rounds": rounds,
                "round_ms": (after["renew_round_us"] - before["renew_round_us"]) / 1000 / rounds,
                "round_trips_per_round":
                    (after["renew_round_trips"] - before["renew_round_trips"]) / rounds,
                "nodes": after["last_round_nodes"], "node_script_ms": node_ms,
                "lost": after["renewed_holds"] - before["renewed_holds"] != holds * rounds}
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--parallel-bin", required=True)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--holds", type=int, default=100000)
    ap.add_argument("--wd-timeout-ms", type=int, default=6000)
    ap.add_argument("--periods", type=int, default=3)
    a = ap.parse_args()
    rows = []
    with RedisCluster(masters=3, replicas=0) as cluster:
        one_port = int(a.url.rsplit(":", 1)[1].split("/")[0])
        targets = [("one node", a.url, [one_port]),
                   ("cluster, 3 masters", cluster.url, [n.port for n in cluster.nodes])]
        for label, url, ports in targets:
            print(f"cluster bench: {label}", file=sys.stderr, flush=True)
            cycles = parallel(a.parallel_bin, url, a.threads, a.seconds)
            wd = watchdog(url, ports, a.holds, a.wd_timeout_ms, a.periods)
            rows.append(dict(wd, impl="redlease", target=label,
                             threads=a.threads, cycles_per_s=cycles["cycles_per_s"]))
    print(json.dumps({"measure": "cluster", "rows": rows}))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
