"""Failover timings through Sentinel: for each kind of failover (planned: SENTINEL FAILOVER;
crash: the master SIGKILLed), N rounds of: a holder takes a watchdog lock, the master goes away,
then the time until another client's first acquire succeeds on the new master, and whether the
holder's lock was kept (still held and renewed on the new master) or reported lost. With and
without sync_replicas=1. Prints a table; `make bench-failover`."""

import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "sentinel")]

from deployment import Deployment  # noqa: E402

import redlease  # noqa: E402
from testkit import Raw, wait_for  # noqa: E402

ROUNDS = int(os.environ.get("FAILOVER_ROUNDS", "10"))
FAST = {"connect_timeout": 1, "command_timeout": 1}


def first_acquire(client, name, deadline):
    while time.monotonic() < deadline:
        try:
            if client.lock(name).acquire(timeout=0):
                client.lock(name).release()
                return time.monotonic()
        except redlease.LockError:
            time.sleep(0.02)
    return None


def one_round(d, kind, sync, i):
    opts = dict(FAST, watchdog_timeout=3)
    if sync:
        opts.update(sync_replicas=1, sync_timeout=1)
    holder = redlease.Client(d.url, **opts)
    other = redlease.Client(d.url, **FAST)
    try:
        held = holder.lock(f"failover:{kind}:{sync}:{i}")
        held.acquire()
        time.sleep(0.3)  # replicated (asynchronously, unless sync)
        if kind == "planned":
            start = time.monotonic()
            d.sentinels[0]("SENTINEL", "FAILOVER", "mymaster")
        else:
            victim = d.master_server()
            start = time.monotonic()
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
        got = first_acquire(other, f"failover:probe:{i}", start + 30)
        time.sleep(3.5)  # more than a lease on the new master
        kept = not held.lost
        if kind == "crash":  # bring the killed server back, as a replica of the new master
            victim.process = None
            victim.start()
            r = Raw(victim.url)
            r("REPLICAOF", "127.0.0.1", str(d.master_port()))
            r.close()
        return (got - start) if got else None, kept
    finally:
        holder.close()
        other.close()


def main():
    rows = []
    for kind in ("planned", "crash"):
        for sync in (False, True):
            d = Deployment()
            try:
                times, kept = [], 0
                for i in range(ROUNDS):
                    assert wait_ready(d), "the deployment did not settle"
                    t, k = one_round(d, kind, sync, i)
                    if t is not None:
                        times.append(t)
                    kept += k
                times.sort()
                rows.append((kind, sync, len(times), times[len(times) // 2] if times else None,
                             times[-1] if times else None, kept, ROUNDS - kept))
            finally:
                d.close()
    print(f"{'failover':8} {'sync_replicas':13} {'acquired':8} {'p50 s':>6} {'max s':>6} "
          f"{'kept':>4} {'lost':>4}")
    for kind, sync, n, p50, worst, kept, lost in rows:
        print(f"{kind:8} {str(int(sync)):13} {n:>4}/{ROUNDS:<3} {p50 or 0:6.2f} {worst or 0:6.2f} "
              f"{kept:>4} {lost:>4}")


def wait_ready(d):
    return wait_for(d._settled, 30)


if __name__ == "__main__":
    main()
