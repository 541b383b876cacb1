"""The goals table: each goal of issue 7 against this run, met or not."""

import statistics

from .fmt import NOT_YET, n0, table


def contended_text(R):
    parts = []
    for w in R.p["contended_workers"]:
        a, b = R.row("contended", "redlease", workers=w), R.row("contended", "redisson", workers=w)
        if not a or not b:
            parts.append(f"{w} workers: " + ("Redisson " + NOT_YET if a else "redlease failed"))
            continue
        parts.append(f"{w} workers: {n0(a['handoffs_per_s'])} vs Redisson "
                     f"{n0(b['handoffs_per_s'])} hand-offs/s, min/max per worker "
                     f"{evenness(a):.2f} vs {evenness(b):.2f}")
    return "; ".join(parts)


def evenness(row):
    return row["per_worker_min"] / max(1, row["per_worker_max"])


def compare_contended(R):
    ok = True
    for w in R.p["contended_workers"]:
        a, b = R.row("contended", "redlease", workers=w), R.row("contended", "redisson", workers=w)
        if not a or not b:
            return "not met"
        ok = ok and a["handoffs_per_s"] >= b["handoffs_per_s"] and evenness(a) >= evenness(b)
    return "met" if ok else "not met"


def goal_cycles(R):
    ping, bare = R.limits()
    py = R.row("cycles", "redlease")
    peers = [r for r in R.rows("cycles") if not r["impl"].startswith("redlease")
             and r["impl"] not in ("ping", "bare-scripts", "redisson")]  # goal (1): Python peers
    if not (py and bare):
        return None
    frac = py.get("of_bare", py["cycles_per_s"] / bare)
    best_peer = max(peers, key=lambda r: r["cycles_per_s"]) if peers else None
    ahead = all(py["cycles_per_s"] > r["cycles_per_s"] for r in peers)
    fixed = R.row("cycles", "redlease-fixed")
    text = f"{frac:.2f} of the bare loop (watchdog, the default" + (
        f"; fixed lease {fixed.get('of_bare', fixed['cycles_per_s'] / bare):.2f}" if fixed
        else "") + "); " + (
        f"best peer {best_peer['label']} {n0(best_peer['cycles_per_s'])}/s vs "
        f"{n0(py['cycles_per_s'])}/s" if best_peer else "no peer measured")
    return ("1", "(1) redlease Python ≥ 0.9 of the bare-hiredis script loop, and ahead of "
            "every Python peer", text, "met" if frac >= 0.9 and ahead else "not met")


def goal_parallel(R):
    par, rpy, ceiling = R.row("parallel", "redlease"), R.row("parallel", "redis-py"), \
        R.data("ceiling")
    if not (par and rpy and ceiling):
        return None
    x = par["cycles_per_s"] / rpy["cycles_per_s"]
    c = par["cycles_per_s"] / ceiling["cycles_per_s"]
    c16 = R.row("parallel", f"redlease-c-pool{R.p['parallel_threads']}")
    return ("1b", "(1b) 16 threads: ≥ 3× redis-py's Lock and ≥ 0.5 of the server's ceiling",
            f"{x:.1f}× redis-py; {c:.2f} of the ceiling" + (
                f" (the C core with a connection per thread: "
                f"{c16['cycles_per_s'] / ceiling['cycles_per_s']:.2f})" if c16 else ""),
            "met" if x >= 3 and c >= 0.5 else "not met")


def goal_handoff(R):
    ho = {r["impl"]: r for r in R.rows("handoff")}
    if "redlease" not in ho:
        return None
    med = statistics.median(ho["redlease"]["latencies_ms"])
    parts, ok = [f"median {med:.3f} ms"], med <= 1.0
    if "redis-py" in ho:
        x = statistics.median(ho["redis-py"]["latencies_ms"]) / med
        parts.append(f"{x:.0f}× better than redis-py")
        ok = ok and x >= 30
    faster = [r["label"] for i, r in ho.items() if i != "redlease"
              and statistics.median(r["latencies_ms"]) < med]
    parts.append("faster peer: " + ", ".join(faster) if faster else "no peer faster")
    ok = ok and not faster
    return ("2", "(2) hand-off median ≤ 1 ms on loopback, ≥ 30× better than redis-py, no peer "
            "faster", "; ".join(parts), "met" if ok else "not met")


def goal_contended(R):
    red = R.has_redisson("contended")
    return ("3", "(3) contended: ≥ Redisson's hand-offs per second, fairness at least as even",
            contended_text(R) if red else "Redisson's rows: " + NOT_YET,
            compare_contended(R) if red else NOT_YET)


def goal_watchdog(R):
    wd = R.data("watchdog")
    if not wd:
        return None
    big = max(wd["rows"], key=lambda r: r["holds"])
    cpu_frac = big["round_cpu_ms_median"] / wd["period_ms"]
    per_k = big["round_trips_per_round"] / (big["holds"] / 1000)
    ok = big["holds"] >= 100000 and per_k <= 1 and cpu_frac <= 0.10 and big["lost"] == 0 \
        and big["lost_events"] == 0
    return ("4", "(4) 100,000 holds renewed with ≤ 1 round trip per 1,000 holds, a round's "
            "CPU ≤ 10% of its period, 0 lost",
            f"{n0(big['holds'])} holds: {big['round_trips_per_round']:.2f} round trip(s) "
            f"per round ({per_k:.3f} per 1,000 holds), CPU {big['round_cpu_ms_median']:.1f}"
            f" ms = {100 * cpu_frac:.1f}% of the {wd['period_ms'] / 1000:g} s period, "
            f"{big['lost']} lost", "met" if ok else
            "not met" if big["holds"] >= 100000 else "not measured at this size")


def goal_gil(R):
    gil = R.row("gil", "redlease")
    if not gil:
        return None
    last = max(gil["points"], key=lambda p: p["waiters"])
    return ("5", "(5) GIL: CPU-bound thread ≥ 0.9 of its solo rate at 32 waiters",
            f"{last['fraction']:.2f} at {last['waiters']} waiters",
            "not measured at this size" if last["waiters"] < 32 else
            "met" if last["fraction"] >= 0.9 else "not met")


def goal_memory(R):
    wd = R.data("watchdog")
    if not wd:
        return None
    big = max(wd["rows"], key=lambda r: r["holds"])
    return ("6", "(6) ≤ 512 bytes per held lock in the core",
            f"{big['bytes_per_held_lock']:.0f} bytes (hold {big['bytes_per_hold']:.0f} + "
            f"lock handle {big['bytes_per_lock_handle']:.0f})",
            "met" if 0 < big["bytes_per_held_lock"] <= 512 else "not met")


GOALS = (goal_cycles, goal_parallel, goal_handoff, goal_contended, goal_watchdog, goal_gil,
         goal_memory)


def goals(R):
    """[(key, goal, this run, verdict)]; verdict is 'met', 'not met' or NOT_YET."""
    return [g for g in (f(R) for f in GOALS) if g]


def missed(R):
    """The keys of the goals this run missed ("1", "1b", ...)."""
    return [k for k, _, _, v in goals(R) if v == "not met"]


def render(R):
    return {
        "goals_table": table(["goal", "this run", "verdict"],
                             [[g, t, f"**{v}**" if v in ("met", "not met") else v]
                              for _, g, t, v in goals(R)]),
        "missed": ", ".join(f"({k})" for k in missed(R)),
    }
