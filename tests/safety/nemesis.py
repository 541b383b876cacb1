"""The faults, and their schedule from a seed.

Each fault starts, lasts its duration, and is healed; the run logs it as a "fault" event with
its target and its real start and end. Faults of one case never overlap, so every overlap or
failed acquire is attributed to one fault.
"""

import os
import random
import signal
import threading
from typing import Callable, Dict, List, Optional, Tuple

from net import Partitions

KINDS = ("partition-one", "partition-half", "pause-holder", "pause-redis", "client-pause",
         "debug-sleep", "busy-script")
FAILOVER_KINDS = ("kill-primary", "partition-primary")  # a deployment with a replica

# Each kind's duration, in leases (the case's watchdog timeout): a holder is paused past its
# lease; the others span from well inside the lease to past it.
DURATION = {"partition-one": (0.5, 2.5), "partition-half": (0.5, 2.5),
            "pause-holder": (1.3, 2.0), "pause-redis": (0.5, 2.0),
            "client-pause": (0.5, 2.0), "debug-sleep": (0.5, 2.0), "busy-script": (0.5, 2.0),
            "kill-primary": (1.5, 3.0), "partition-primary": (1.5, 3.0)}

# A script that runs for ARGV[1] microseconds: past busy-reply-threshold (servers.Redis sets it
# to 100 ms) every other client is answered BUSY until it ends.
BUSY = """local t0 = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1]) then return 1 end
end"""


def schedule(seed: int, case: str, kinds: List[str], duration: float,
             lease: float) -> List[Tuple[float, str, float]]:
    """(offset from the start in s, kind, duration in s), from the seed alone. After the last
    fault, at least one lease and 3 s without any (the check for stuck locks)."""
    rng = random.Random(f"{seed}:{case}")
    out: List[Tuple[float, str, float]] = []
    t = max(2.0, lease / 2)
    while kinds:
        kind = rng.choice(kinds)
        lo, hi = DURATION[kind]
        d = round(lease * rng.uniform(lo, hi), 3)
        if t + d + lease + 3 > duration:
            break
        out.append((round(t, 3), kind, d))
        t += d + lease * rng.uniform(1.0, 1.5) + 1
    return out


class Nemesis:
    def __init__(self, partitions: Partitions, topology, workers: Dict[str, int],
                 gids: Dict[str, int], client_ids: Callable[[], Dict[str, str]],
                 locks: List[str]) -> None:
        self.partitions, self.topology = partitions, topology
        self.workers, self.gids, self.client_ids, self.locks = workers, gids, client_ids, locks

    def start(self, kind: str, d: float, rng: random.Random) -> Tuple[List[str], Callable]:
        """Starts the fault; answers its target and the function that heals it."""
        procs = sorted(self.workers)
        master = self.topology.master()
        if kind in ("partition-one", "partition-half"):
            # a holder of a lock first, when there is one: cutting an idle client proves little
            holder = self.holder(rng)
            others = [p for p in procs if p != holder]
            n = 1 if kind == "partition-one" else max(1, len(procs) // 2)
            target = ([holder] if holder else []) + rng.sample(others, n - bool(holder))
            self.partitions.cut(processes=[(self.gids[p], a) for p in target
                                           for a in self.topology.addresses])
            return target, self.partitions.heal
        if kind == "pause-holder":
            p = self.holder(rng) or rng.choice(procs)
            os.kill(self.workers[p], signal.SIGSTOP)
            return [p], lambda: os.kill(self.workers[p], signal.SIGCONT)
        if kind == "pause-redis":
            pid = master.process.pid
            os.kill(pid, signal.SIGSTOP)
            return [master.address], lambda: os.kill(pid, signal.SIGCONT)
        if kind == "client-pause":
            master.call("CLIENT", "PAUSE", str(int(d * 1000)), "ALL")
            # it ends by itself after d (an UNPAUSE would wait behind the pause)
            return [master.address], lambda: None
        if kind in ("debug-sleep", "busy-script"):
            args = (("DEBUG", "SLEEP", f"{d:.3f}") if kind == "debug-sleep" else
                    ("EVAL", BUSY, "0", str(int(d * 1e6))))
            t = threading.Thread(target=master.call, args=args, kwargs={"timeout": d + 10},
                                 daemon=True)
            t.start()
            return [master.address], t.join
        if kind == "kill-primary":
            master.kill()
            return [master.address], lambda: self.topology.restart(master)
        if kind == "partition-primary":
            # the primary cut from its replica and the sentinels; clients still reach it
            others = [a for a in self.topology.addresses if a != master.address]
            self.partitions.cut(pairs=[(master.address, a) for a in others])
            return [master.address], self.partitions.heal
        raise ValueError(kind)

    def holder(self, rng: random.Random) -> Optional[str]:
        """A process that holds a lock now, from what Redis stores (hash field or value)."""
        ids = self.client_ids()
        master = self.topology.master()
        for lock in rng.sample(self.locks, len(self.locks)):
            try:
                kind = master.call("TYPE", lock, timeout=0.5)
                reply = master.call("HKEYS" if kind.startswith(b"+hash") else "GET", lock,
                                    timeout=0.5)
            except OSError:
                return None
            for proc, cid in ids.items():
                if (cid + ":").encode() in reply:
                    return proc
        return None
