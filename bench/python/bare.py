"""The bare hiredis loop of bench/c/bare_loop.c (build/bench_bare.so, or $BENCH_BARE) through
ctypes: the wire's limits measured from inside a benchmark's own process."""

import ctypes
import os
import sys
from types import SimpleNamespace


def loop(url):
    """ping(n), scripts(n), acquire(n) -> per second: PING round trips, acquire+release script
    cycles, and acquire-script round trips (bare_loop.h), on one connection of this process;
    handoff(n) -> the ms of each of n bare hand-offs (bl_handoff); handoff_apart(n, settle_ms)
    -> the same with the waiter in a process of its own (bl_handoff_apart)."""
    path = os.environ.get("BENCH_BARE") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bench_bare.so")
    lib = ctypes.CDLL(path)
    lib.bl_open.restype = ctypes.c_void_p
    lib.bl_open.argtypes = [ctypes.c_char_p]
    for f in (lib.bl_ping, lib.bl_scripts, lib.bl_acquire):
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_void_p, ctypes.c_int]
    conn = lib.bl_open(url.encode())
    if not conn:
        sys.exit("the bare loop cannot connect")

    def runner(f):
        def run(n):
            rate = f(conn, n)
            if rate <= 0:
                sys.exit("the bare loop failed")
            return rate
        return run
    lib.bl_handoff.restype = ctypes.c_int
    lib.bl_handoff.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]

    def handoff(n):
        """n bare hand-offs (bl_handoff, on connections of their own): each one's ms."""
        out = (ctypes.c_double * n)()
        if lib.bl_handoff(url.encode(), n, out) != 0:
            sys.exit("the bare hand-off failed")
        return list(out)
    lib.bl_handoff_apart.restype = ctypes.c_int
    lib.bl_handoff_apart.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_double,
                                     ctypes.POINTER(ctypes.c_double)]

    def handoff_apart(n, settle_ms):
        """n bare hand-offs to a waiter in a forked process (bl_handoff_apart): each one's ms."""
        out = (ctypes.c_double * n)()
        if lib.bl_handoff_apart(url.encode(), n, settle_ms, out) != 0:
            sys.exit("the bare hand-off between processes failed")
        return list(out)
    return SimpleNamespace(ping=runner(lib.bl_ping), scripts=runner(lib.bl_scripts),
                           acquire=runner(lib.bl_acquire), handoff=handoff,
                           handoff_apart=handoff_apart)
