"""The harness's steps for measure 8, asyncio locks (bench/run.py calls them):
bench/python/asyncio_locks.py against redis-py's asyncio Lock and aioredlock."""

from aio_peers import AIO_PEERS, aio_available


def asyncio_locks(h):
    """One-task cycles (beside the blocking Python row, in one process), many waiting tasks
    (each library in a fresh process) and the hand-off between two processes."""
    p = h.p
    full = p["handoffs"] >= 100
    peers = [name for name in AIO_PEERS if aio_available(name)]
    script = "asyncio_locks.py"
    # (bursts four times as many as measure 1's, as short: more pairs for the per-burst ratios)
    h.run("aio-cycles", "aio-cycles",
          h.py(script, "cycles", ",".join(["redlease", "redlease-asyncio"] + peers), "--bursts",
               4 * p["cycle_bursts"], "--cycles", p["cycles"], "--seconds", p["cycle_seconds"]))
    for name in ["redlease-asyncio"] + [n for n in peers if n == "redis-py-asyncio"]:
        h.run(f"aio-waiting-{name}", "aio-waiting",
              h.py(script, "waiting", name, "--tasks",
                   (p["aio_wait_tasks"] if name == "redlease-asyncio" else 10000) if full else 200,
                   "--seconds", 5 if full else 0.5))
    for name in ["redlease-asyncio"] + peers:
        h.run(f"aio-handoff-{name}", "aio-handoff",
              h.py(script, "handoff", name, "--rounds", p["handoffs"]))
