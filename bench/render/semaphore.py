"""Measure 2b: semaphores, redlease's Semaphore (Python) against Redisson's RSemaphore (Java):
acquire + release cycles per second, and the permit hand-off latency between two processes."""

import statistics

from .fmt import NOT_YET, f2, ms, n0, pct, table


def render(R):
    rows_in = R.rows("semaphore")
    base = next((r for r in rows_in if r["impl"] == "redlease"), None)
    rows = []
    for r in rows_in:
        lat = r["latencies_ms"]
        med = statistics.median(lat)
        rows.append([r["label"] + (f" {r['version']}" if r.get("version") else ""),
                     n0(r["cycles_per_s"]), f2(base and r["cycles_per_s"] / base["cycles_per_s"]),
                     ms(med), ms(pct(lat, 0.9)), ms(pct(lat, 0.99)), ms(max(lat)), len(lat),
                     f2(base and med / statistics.median(base["latencies_ms"]))])
    if not R.has_redisson("semaphore"):
        rows.append(["Redisson RSemaphore (Java)", NOT_YET, "", "", "", "", "", "", ""])
    return {
        "semaphore_cycles": f"{R.p['cycles']:,}",
        "semaphore_seconds": R.p["cycle_seconds"],
        "semaphore_table": table(["", "cycles/s", "× redlease's", "hand-off median ms", "p90",
                                  "p99", "max", "hand-offs", "median / redlease's"], rows),
    }
