"""Costs of the operator's tools on a throwaway server: `client.scan` over 50,000 keys holding 100
locks (SCAN steps and time), the `redlease scan` command end to end, and `client.inspect`.

    build/venv/bin/python bench/python/operations.py [--keys N] [--locks N]

Prints one JSON object {"measure": "operations", ...}. Not part of bench/run.py's report.
"""

import argparse
import json
import subprocess
import sys
import time

import redlease
from redlease.testing import RedisServer


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, default=50_000)
    p.add_argument("--locks", type=int, default=100)
    a = p.parse_args()
    with RedisServer(extra_args=["--enable-debug-command", "yes"]) as s:
        c = redlease.Client(s.url)
        subprocess.run(["redis-cli", "-p", str(s.port), "DEBUG", "POPULATE", str(a.keys),
                        "filler"], check=True, capture_output=True)
        for i in range(a.locks):
            c.lock(f"job:{i}", lease=60).acquire()
        steps = [0]

        def step(_: int) -> None:
            steps[0] += 1

        t = time.monotonic()
        found = list(c.scan(on_step=step))
        scan_ms = (time.monotonic() - t) * 1000
        t = time.monotonic()
        cmd = subprocess.run([sys.executable, "-m", "redlease", "scan", "--json", "--limit",
                              str(a.locks * 10), "--url", s.url], capture_output=True, text=True)
        command_s = time.monotonic() - t
        n = 1000
        t = time.monotonic()
        for _ in range(n):
            c.inspect("job:1")
        inspect_us = (time.monotonic() - t) / n * 1e6
        c.close()
    print(json.dumps({"measure": "operations", "keys": a.keys + a.locks, "locks_found": len(found),
                      "scan_steps": steps[0], "scan_ms": round(scan_ms, 1),
                      "scan_command_s": round(command_s, 3),
                      "scan_command_found": len(json.loads(cmd.stdout)),
                      "inspect_us": round(inspect_us, 1)}))


if __name__ == "__main__":
    main()
