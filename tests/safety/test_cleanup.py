"""A run killed by SIGKILL in the middle of a fault leaves nothing behind: its children die with
it (parent-death signal), and the next run's sweep removes its nftables table, directory and
any child left."""

import os
import signal
import subprocess
import sys
import time

import net
import procs
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


# (case, children once its servers and workers run: one Redis and PostgreSQL with four workers,
# an nginx among them; six Cluster nodes and PostgreSQL with three workers)
@pytest.mark.parametrize("case, started", [("partition-half", 6), ("cluster/reshard", 10)])
def test_kill_9_mid_run_then_the_sweep_removes_everything(tmp_path, case, started):
    runner = subprocess.Popen([sys.executable, os.path.join(HERE, "run.py"), "--case",
                               case, "--seed", "1", "--out", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids_file = os.path.join(procs.ROOT, f"run-{runner.pid}.pids")
    deadline = time.monotonic() + 60
    children = []
    while time.monotonic() < deadline:  # until redis, postgres and the workers run
        if os.path.exists(pids_file):
            with open(pids_file) as f:
                lines = f.read().splitlines()
            children = [int(line.split()[0]) for line in lines[1:]]
            if len(children) >= started:
                break
        time.sleep(0.2)
    assert len(children) >= started, "the run did not start its servers and workers"
    time.sleep(6)  # into the first partition (2 s after the workers start)
    table = f"{net.PREFIX}{runner.pid}"
    assert table in net.tables()
    run_dir = lines[0]
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(procs.alive(p) for p in children):
        time.sleep(0.1)
    assert not [p for p in children if procs.alive(p)], "children outlived the run"
    assert table in net.tables() and os.path.isdir(run_dir)
    net.sweep()
    procs.sweep()
    assert table not in net.tables()
    assert not os.path.exists(run_dir) and not os.path.exists(pids_file)
