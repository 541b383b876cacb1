"""Redisson's rows (bench/redisson, run through $BENCH_REDISSON): which version, and whether the
page explains how they were measured."""

MEASURES = ("cycles", "parallel", "handoff", "contended", "watchdog")


def versions(R):
    vs = {r.get("version") for m in MEASURES for r in R.rows(m) if r["impl"] == "redisson"}
    vs.discard(None)
    return (f"{', '.join(sorted(vs))} " if vs else "") + \
        "(Java, `bench/redisson/run`, see [Redisson's rows](#redissons-rows))"


def render(R):
    return {"redisson_method": R.r["redisson"]}
