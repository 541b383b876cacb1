"""Measure 8: asyncio locks. redlease.asyncio against the blocking Python row of the same
process, redis-py's asyncio Lock and aioredlock: one-task cycles, many waiting tasks, hand-off."""

import statistics

from .fmt import f2, ms, n0, pct, table, verdict


def render(R):
    cyc = R.rows("aio-cycles")
    sync = next((r for r in cyc if r["impl"] == "redlease"), None)
    aio = next((r for r in cyc if r["impl"] == "redlease-asyncio"), None)
    rows = [[r["label"] + (" (blocking, same process)" if r["impl"] == "redlease" else "")
             + (f" {r['version']}" if r.get("version") else ""), n0(r["cycles_per_s"]),
             f2(r.get("of_blocking", sync and r["cycles_per_s"] / sync["cycles_per_s"]))]
                 for r in cyc]
    wait_rows = [[r["label"] + (f" ({r['note']})" if r.get("note") else ""), f"{r['tasks']:,}",
                  f"{r['loop_cpu_pct']:.3f}", f"{r['process_cpu_pct']:.3f}",
                  f"{r['rss_per_task_bytes'] / 1024:.1f}"] for r in R.rows("aio-waiting")]
    ho = R.rows("aio-handoff")
    base = next((statistics.median(r["latencies_ms"]) for r in ho
                 if r["impl"] == "redlease-asyncio"), None)
    ho_rows = []
    for r in ho:
        lat = r["latencies_ms"]
        med = statistics.median(lat)
        ho_rows.append([r["label"], ms(med), ms(pct(lat, 0.9)), ms(pct(lat, 0.99)), ms(max(lat)),
                        len(lat), f2(base and med / base)])
    goals = []
    if sync and aio:
        ratio = aio.get("of_blocking", aio["cycles_per_s"] / sync["cycles_per_s"])
        goals.append(["one task's cycles ≥ 0.8 of the blocking Python row", f"{ratio:.3f}",
                      verdict(ratio >= 0.8)])
    waiting = R.row("aio-waiting", "redlease-asyncio")
    if waiting:
        goals.append([f"{waiting['tasks']:,} waiting tasks: the process under 2% of a core",
                      f"{waiting['process_cpu_pct']:.3f}%",
                      verdict(waiting["process_cpu_pct"] < 2)])
    rpy = next((statistics.median(r["latencies_ms"]) for r in ho
                if r["impl"] == "redis-py-asyncio"), None)
    if base is not None:
        goals.append(["hand-off p50 ≤ 1 ms and ≥ 30× better than redis-py's asyncio Lock",
                      f"{ms(base)} ms" + (f", {rpy / base:.0f}×" if rpy else ""),
                      verdict(base <= 1 and rpy is not None and rpy / base >= 30)])
    return {
        "aio_cycles_table": table(["", "cycles/s", "× the blocking row"], rows),
        "aio_waiting_table": table(["", "waiting tasks", "loop thread CPU %", "process CPU %",
                                    "KiB RSS per waiting task"], wait_rows),
        "aio_handoff_table": table(["", "median ms", "p90", "p99", "max", "hand-offs",
                                    "median / redlease.asyncio's"], ho_rows),
        "aio_goals_table": table(["goal (issue 16)", "this run", ""], goals),
    }
