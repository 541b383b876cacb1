"""Instructions per operation (callgrind: bench/callgrind.py) beside the same operations' times
on this page (measure 1's and measure 2's C rows, measure 4's largest watchdog row)."""

import statistics

from .fmt import n0, table


def us(x):
    return "–" if x is None else (f"{x:.2f} µs" if x < 10 else f"{x:,.0f} µs")


def times(R):
    """{operation: (µs per operation on this page, where it comes from)}."""
    out = {}
    core = R.data("core")
    if core:
        by = {r["impl"]: r for r in core["rows"]}
        for op, impl, label in (("cycle-fixed", "redlease-c-fixed", "fixed lease"),
                                ("cycle-watchdog", "redlease-c", "watchdog")):
            if impl in by and by[impl]["cycles_per_s"]:
                out[op] = (1e6 / by[impl]["cycles_per_s"], f"1. C core, {label} (1 / cycles/s)")
        lat = core["handoff"]["latencies_ms"]
        if lat:
            out["handoff"] = (statistics.median(lat) * 1e3, "2. C core, median latency")
    rows = [r for r in R.rows("watchdog") if r["impl"] == "redlease-c" and r.get("holds")]
    if rows:
        r = max(rows, key=lambda r: r["holds"])
        out["watchdog"] = (r["round_ms_median"] * 1e3 / r["holds"],
                           f"4. round wall time / {r['holds']:,} holds "
                           f"(CPU: {us(r['round_cpu_ms_median'] * 1e3 / r['holds'])})")
    return out


def render(R):
    d = R.data("callgrind")
    if not d:
        failed = R.failed("callgrind")
        return {"callgrind": False, "callgrind_margin": "",
                "callgrind_failed": R.steps[failed[0]]["error"] if failed else "not run"}
    t = times(R)
    rows = []
    for r in d["rows"]:
        time, where = t.get(r["impl"], (None, ""))
        what = r["what"] + (f" (smoke sizes: `{' '.join(r['args'])}`)" if d.get("smoke") else "")
        rows.append([f"`{r['impl']}`", what, n0(r["instructions_per_op"]),
                     f"{n0(r['budget'])} +{r.get('margin', d['margin']):.0%} = {n0(r['limit'])}"
                     + ("" if r["within"] else ": **over**"), us(time), where])
    return {
        "callgrind": True,
        "callgrind_margin": f"{d['margin']:.0%}" + "".join(
            f", `{r['impl']}` {r['margin']:.0%}" for r in d["rows"]
            if r.get("margin", d["margin"]) != d["margin"]),
        "callgrind_table": table(["operation", "one operation", "instructions (callgrind)",
                                  "budget + margin = limit", "time on this page", "from"], rows),
    }
