"""Measure 2: hand-off latency between two processes.

    handoff.py URL IMPL --rounds N

Each round: this process (the holder) takes the lock and tells a second process (the waiter) to
acquire it; the waiter blocks; after a short settle time the holder notes the time and releases;
the waiter notes the time at which its acquire returned, releases, and sends that time back.
Both read CLOCK_MONOTONIC, which is one clock for every process of the machine. The latency is
waiter-holds minus holder-releases: it includes however the library wakes its waiter (pub/sub,
BLPOP, polling) and the waiter's acquire round trip. For a library that polls at a fixed
interval (redis-py: 0.1 s), the release comes at a random point of the waiter's interval (the
settle time gets a random extra of up to one interval), as it would in real use; with a fixed
settle time, every release would land at the same phase of the poll. With --wire, the holder
also measures the wire between the rounds (the rounds run in BLOCKS blocks, each after a block
of the wire's measures, so that a slow moment of the machine weighs on both), on bare hiredis
connections of its own process (bench_bare.so): one PING round trip and one round trip of
redlease's acquire script, the goal's floor for a hand-off (the release's message reaching the
waiter, then its acquire); bare hand-offs: the same release and acquire scripts and the
release's message on three hiredis connections driven by one thread, with no client around them
(bl_handoff), the least a hand-off over this wire takes; and the same bare hand-off with the
waiter in a process of its own, asleep in its read until the message wakes it, as a waiting
client in another process is (bl_handoff_apart, with the same settle time). Prints one JSON
object.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import bare
from peers import IMPLS, version_of

SETTLE = 0.003  # s between "start waiting" and the release: the waiter is blocked by then
NAME = "bench:handoff"
BLOCKS = 5  # the rounds' blocks, each after a block of the wire's measures
WIRE_ROUNDS = 800  # round trips per wire measure in each block (bare hand-offs: half as many)


class Wire:
    """The wire's measures, a block at a time (bench_bare.so)."""

    def __init__(self, url):
        self.bare = bare.loop(url)
        self.round_trips, self.handoffs, self.apart = [], [], []

    def block(self, apart_rounds):
        """(PING ms, acquire-script ms), each the mean over WIRE_ROUNDS; WIRE_ROUNDS // 2 bare
        hand-offs; apart_rounds bare hand-offs to a waiter in another process (its first
        dropped: it warms the new process up)."""
        w = self.bare
        self.round_trips.append((1e3 / w.ping(WIRE_ROUNDS), 1e3 / w.acquire(WIRE_ROUNDS)))
        self.handoffs += w.handoff(WIRE_ROUNDS // 2)
        self.apart += w.handoff_apart(apart_rounds + 1, SETTLE * 1e3)[1:]

    def figures(self):
        return {"ping_rtt_ms": statistics.mean(m[0] for m in self.round_trips),
                "acquire_rtt_ms": statistics.mean(m[1] for m in self.round_trips),
                "bare_handoff_ms": statistics.median(self.handoffs),
                "bare_handoff_apart_ms": statistics.median(self.apart),
                "wire_blocks": len(self.round_trips)}


def waiter(url, impl_name):
    impl = IMPLS[impl_name](url)
    lock = impl.lock(NAME)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        if not lock.acquire(None):
            sys.exit("waiter: acquire returned False")
        held_at = time.monotonic()
        lock.release()
        print(repr(held_at), flush=True)
    impl.close()


def holder(url, impl_name, rounds, wire):
    cls = IMPLS[impl_name]
    wire = Wire(url) if wire else None
    blocks = max(1, min(BLOCKS, rounds)) if wire else 1
    impl = cls(url)
    lock = impl.lock(NAME)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), url, impl_name,
                              "--waiter"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, bufsize=1)
    if child.stdout.readline().strip() != "ready":
        sys.exit("waiter did not start")
    latencies = []
    per_block = -(-rounds // blocks)  # rounded up
    for i in range(rounds + 1):  # round 0 warms both sides up
        if wire and i >= 1 and (i - 1) % per_block == 0:
            wire.block(per_block)
        if not lock.acquire(None):
            sys.exit("holder: acquire returned False")
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(SETTLE + random.uniform(0, getattr(cls, "poll_interval", 0)))
        released_at = time.monotonic()
        lock.release()
        line = child.stdout.readline()
        if not line:
            sys.exit("waiter died")
        if i:
            latencies.append((float(line) - released_at) * 1e3)
    child.stdin.close()
    child.wait()
    impl.close()
    row = {"impl": cls.name, "label": cls.label, "version": version_of(cls.dist),
           "rounds": rounds, "latencies_ms": sorted(latencies)}
    if wire:
        row.update(wire.figures())
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("impl", choices=sorted(IMPLS))
    p.add_argument("--rounds", type=int, default=250)
    p.add_argument("--waiter", action="store_true")
    p.add_argument("--wire", action="store_true",
                   help="also measure PING and acquire-script round trips (bench_bare.so)")
    a = p.parse_args()
    if a.waiter:
        waiter(a.url, a.impl)
    else:
        print(json.dumps({"measure": "handoff", "rows": [holder(a.url, a.impl, a.rounds, a.wire)]}))


if __name__ == "__main__":
    main()
