"""Defects the harness found, each reproduced on purpose (the run that found it: its seed in the
docstring). A test marked xfail(strict) reproduces a defect still open: it turns into a failure
the day the defect is fixed, so that the mark is removed and the test guards the fix."""

import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import cases
import net
import procs
import servers

import run

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                   "safety-regressions")

# A client process driven line by line on stdin; it answers each line with one line.
CLIENT = r"""
import sys, redlease
client = redlease.Client(sys.argv[1], watchdog_timeout=5, connect_timeout=0.5,
                         command_timeout=0.5)
lock = client.lock("regression")
lock.acquire()
print("held", flush=True)
for line in sys.stdin:
    try:
        if line.startswith("release"):
            lock.release()
            out = "released"
        elif line.startswith("again"):
            # as a worker does after a failed release: acquire (which first settles the failed
            # release), work, release, and take the lock again
            lock.acquire(timeout=2)
            lock.release()
            lock.acquire(timeout=2)
            out = "held again"
        else:
            out = f"held={lock.held()} lost={lock.lost}"
    except Exception as e:
        out = type(e).__name__
    print(out, flush=True)
"""


def test_a_release_given_up_in_a_partition_never_lands_on_a_later_hold():
    """Found by `make safety`, seed 2929, case partition-one: an unreported overlap on fenced:0.
    The release's bytes wait in the kernel for TCP to retransmit them; the client times out,
    closes the connection (gracefully: the kernel keeps retransmitting), settles the release
    again after the heal (its unlock latch is deleted once answered) and takes the lock again;
    then the old bytes arrive, and Redis applies that release to the new hold of the same
    owner: the key is deleted under a holder that was never told, and another owner takes it.
    Fixed: a connection dropped after a failed call is closed abortively (the kernel drops the
    unsent bytes), and a retried release keeps its latch for its TTL (a copy already in Redis's
    buffer is answered by it)."""
    run, parts = procs.Run(), net.Partitions()
    try:
        redis = servers.OneRedis(run, net.node_address(0)).master()
        gid = net.client_gid(0)
        parts.label(gid)
        client = run.spawn([sys.executable, "-c", CLIENT, redis.url()], gid=gid,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def ask(line: str) -> str:
            client.stdin.write(line + "\n")
            client.stdin.flush()
            return client.stdout.readline().strip()

        assert client.stdout.readline().strip() == "held"
        parts.cut(processes=[(gid, redis.address)])
        sent = time.monotonic()
        assert ask("release") == "ConnectionError"  # after its 0.5 s command timeout
        parts.heal()  # before TCP's retransmissions at about +0.2, +0.6, +1.4, +3.0 s
        assert time.monotonic() - sent < 1.2
        assert ask("again") == "held again"
        time.sleep(max(0.0, sent + 4.0 - time.monotonic()))  # past the retransmissions
        assert ask("check") == "held=True lost=False"
        assert b"regression" in redis.call("KEYS", "*")
    finally:
        parts.close()
        run.close()


def test_a_lua_client_cut_from_every_cluster_node_is_told_in_time():
    """Found by `make safety`, seed 1249368817, case cluster/partition-one: 106 unreported
    overlaps, each with a Lua process as the earlier holder. Cut off from every node, a call took
    3.4 s with 0.5 s timeouts (after a failed connect it asked every node for the slot map in
    turn, each with a full connect timeout), and the watchdog's round did the same before
    deciding: holds went from held to lost 2 s past their lease, never in doubt, and the rock,
    which hands its program the events between calls, told it when the call returned. Fixed: a
    call or round asks the map within its own time, and taking the events settles the holds by
    the clock. 20 s of the case with Lua processes only (about 35 s in all): 69 unreported
    overlaps before the fix."""
    case = next(c for c in cases.cluster() if c.name == "cluster/partition-one")
    case = replace(case, duration=20.0, langs=("lua",))
    r = run.run_case(case, 1249368817, os.path.join(OUT, "cluster-partition-one"))
    assert r["acquisitions"] > 100
    assert len(r["faults"]) >= 1
    assert r["unreported"] == 0, json.dumps(r["unreported_detail"][:3], indent=1)
