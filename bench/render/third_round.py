"""The third round's goals (issue 32) other than how cost grows (scale.py): asyncio against the
blocking row, the hand-off against the bare one, one thread against the bare script loop, and the
instruction counts beside the times; with the figures the notes on a missed goal quote."""

import statistics

from .fmt import f2, ms, table, verdict

AIO_GOAL, HANDOFF_GOAL, PY_GOAL, C_GOAL = 0.85, 1.3, 0.95, 0.97


def goal_asyncio(R):
    cyc = R.rows("aio-cycles")
    sync = next((r for r in cyc if r["impl"] == "redlease"), None)
    aio = next((r for r in cyc if r["impl"] == "redlease-asyncio"), None)
    if not (sync and aio):
        return None
    # the median of per-burst ratios where the step has them (runs before: of the medians)
    ratio = aio.get("of_blocking", aio["cycles_per_s"] / sync["cycles_per_s"])
    extra_us = 1e6 / aio["cycles_per_s"] - 1e6 / sync["cycles_per_s"]
    floor = R.data("aio-cycles").get("floor")
    floor_text = ""
    if floor:
        b, a = floor["blocking"]["cycles_per_s"], floor["asyncio"]["cycles_per_s"]
        floor_text = (f"; a bare cycle on an asyncio Protocol against the same cycle blocking "
                      f"(a client making its round trips on the loop): "
                      f"{floor.get('of_blocking', a / b):.2f} ({a:,.0f} against {b:,.0f}); "
                      f"redlease.asyncio against that bare asyncio cycle: "
                      f"{aio['cycles_per_s'] / a:.2f}")
    return ("T1", f"(1) asyncio: one task's cycles ≥ {AIO_GOAL} of the blocking Python row",
            f"{ratio:.3f} (medians {aio['cycles_per_s']:,.0f} against {sync['cycles_per_s']:,.0f} "
            f"cycles/s in one process: {extra_us:.0f} µs more per cycle){floor_text}",
            verdict(ratio >= AIO_GOAL))


def goal_handoff(R):
    ho = R.row("handoff", "redlease")
    if not ho or not ho.get("bare_handoff_ms"):
        return None
    p50 = statistics.median(ho["latencies_ms"])
    ratio = p50 / ho["bare_handoff_ms"]
    apart = ho.get("bare_handoff_apart_ms")
    apart_text = "" if not apart else (
        f"; the bare hand-off to a waiter asleep in a process of its own: {ms(apart)} ms, "
        f"redlease {p50 / apart:.2f} × that")
    return ("T2", f"(2) hand-off: Python p50 ≤ {HANDOFF_GOAL} × the bare hand-off of the same run",
            f"p50 {ms(p50)} ms against a bare hand-off of {ms(ho['bare_handoff_ms'])} ms: "
            f"{ratio:.2f} ×{apart_text}", verdict(ratio <= HANDOFF_GOAL))


def goal_one_thread(R):
    py = R.row("cycles", "redlease")
    core = R.data("core")
    fixed = core and next((r for r in core["rows"] if r["impl"] == "redlease-c-fixed"), None)
    if not (py and fixed and "of_bare" in py and "of_bare" in fixed):
        return None
    ok = py["of_bare"] >= PY_GOAL and fixed["of_bare"] >= C_GOAL
    return ("T3", f"(3) one thread: Python ≥ {PY_GOAL} and C with a fixed lease ≥ {C_GOAL} of the "
            "bare script loop", f"Python, watchdog: {f2(py['of_bare'])}; C, fixed lease: "
            f"{f2(fixed['of_bare'])}", verdict(ok))


def goal_counts(R):
    d = R.data("callgrind")
    if not d:
        return ("T5", "(5) instruction counts (callgrind) beside the times, and a guard in "
                "`make test`", "the callgrind step failed or did not run", "not met")
    within = all(r["within"] for r in d["rows"])
    return ("T5", "(5) instruction counts (callgrind) beside the times, and a guard in "
            "`make test`", f"{len(d['rows'])} operations counted (measure 1's table), "
            + ("every one within its budget" if within else "some over their budget"),
            verdict(within))


GOALS = (goal_asyncio, goal_handoff, goal_one_thread, goal_counts)


def goals(R):
    return [g for g in (f(R) for f in GOALS) if g]


def profile_figures(R):
    """From measure 1's profile: per cycle, the C core's (fixed lease) system calls and client
    CPU against the bare script loop's."""
    d = R.data("profile")
    by = {r["impl"]: r for r in d["rows"]} if d else {}
    bare, core = by.get("bare-scripts"), by.get("redlease-c-fixed")
    if not (bare and core):
        return {"t3_profile": "(the profile step did not run)"}
    return {"t3_profile": (
        f"{core['syscalls']:.1f} system calls and {core['client_cpu_us']:.1f} µs of client CPU "
        f"per cycle against the bare loop's {bare['syscalls']:.1f} and "
        f"{bare['client_cpu_us']:.1f} µs")}


def render(R):
    gs = goals(R)
    out = {
        "third_goals_table": table(["goal (issue 32)", "this run", "verdict"],
                                   [[g, t, f"**{v}**"] for _, g, t, v in gs]),
        "third_missed": ", ".join(k[1:] for k, _, _, v in gs if v == "not met"),
    }
    out.update(profile_figures(R))
    return out
