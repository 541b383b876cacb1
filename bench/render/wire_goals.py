"""The second goals table: the one-thread cycle against the wire itself, the hand-off against
the round trips it cannot do without, fairness without losing throughput, and the profile."""

import statistics

from .fmt import NOT_YET, ms, n0, table
from .goals import evenness

FAIR_WORKERS = (2, 8)


def goal_wire_cycles(R):
    core = R.data("core")
    py = R.row("cycles", "redlease")
    fixed = core and next((r for r in core["rows"] if r["impl"] == "redlease-c-fixed"), None)
    if not (py and fixed and "of_ping" in py):
        return None
    ping, bare = R.limits()
    ok = py["of_ping"] >= 0.9 and fixed["of_ping"] >= 0.95
    text = (f"Python, watchdog: {py['of_ping']:.2f} of two PINGs; C, fixed lease: "
            f"{fixed['of_ping']:.2f}" + (
                f" (the bare script loop, the same two scripts with no client around them: "
                f"{bare / ping:.2f})" if ping and bare else ""))
    return ("W1", "(W1) one thread: Python, watchdog mode ≥ 0.9 of two PING round trips; C, "
            "fixed lease ≥ 0.95", text, "met" if ok else "not met")


def goal_wire_handoff(R):
    ho = R.row("handoff", "redlease")
    if not ho or "ping_rtt_ms" not in ho:
        return None
    p50 = statistics.median(ho["latencies_ms"])
    bound = 1.2 * (ho["ping_rtt_ms"] + ho["acquire_rtt_ms"])
    text = (f"p50 {ms(p50)} ms against 1.2 × ({ms(ho['ping_rtt_ms'])} PING + "
            f"{ms(ho['acquire_rtt_ms'])} acquire) = {ms(bound)} ms")
    if ho.get("bare_handoff_ms"):
        text += (f" (a bare hand-off, the same scripts and message with no client around them: "
                 f"{ms(ho['bare_handoff_ms'])} ms = "
                 f"{ho['bare_handoff_ms'] / (ho['ping_rtt_ms'] + ho['acquire_rtt_ms']):.2f} × "
                 f"(PING + acquire))")
    ok = p50 <= bound
    busy = max(R.p["contended_workers"])
    con = R.row("contended", "redlease", workers=busy)
    if con and con.get("handoff_p99_ms") is not None:
        text += (f"; {busy} workers: p99 {ms(con['handoff_p99_ms'])} ms = "
                 f"{con['handoff_p99_ms'] / p50:.2f}× that p50 (their own p50: "
                 f"{ms(con['handoff_p50_ms'])} ms)")
        ok = ok and con["handoff_p99_ms"] <= 3 * p50
    else:
        text += f"; {busy} workers: not measured"
        ok = False
    return ("W2", "(W2) hand-off: Python p50 ≤ 1.2 × (one PING + one acquire round trip); p99 "
            "under 32 contending workers ≤ 3 × that p50", text, "met" if ok else "not met")


def goal_fairness(R):
    parts, ok, measured = [], True, False
    for w in FAIR_WORKERS:
        a = R.row("contended", "redlease", workers=w)
        b = R.row("contended", "redisson", workers=w)
        before = R.row("contended", "redlease-no-grace", workers=w)
        if not a:
            continue
        measured = True
        part = f"{w} workers: min/max {evenness(a):.2f}"
        if b:
            part += f" vs Redisson {evenness(b):.2f}"
            ok = ok and evenness(a) >= evenness(b)
        else:
            part += f" (Redisson {NOT_YET})"
            ok = False
        if before:
            part += (f"; {n0(a['handoffs_per_s'])} hand-offs/s = "
                     f"{a['handoffs_per_s'] / max(1e-9, before['handoffs_per_s']):.2f} of the "
                     f"lock without the grace ({n0(before['handoffs_per_s'])}/s, min/max "
                     f"{evenness(before):.2f})")
            ok = ok and a["handoffs_per_s"] >= 0.9 * before["handoffs_per_s"]
        else:
            part += "; without the grace: not measured"
            ok = False
        parts.append(part)
    if not measured:
        return None
    return ("W3", "(W3) fairness of the default lock at 2 and 8 workers: min/max per worker ≥ "
            "Redisson's, hand-offs/s ≥ 0.9 of the same lock without the hand-over grace",
            "; ".join(parts), "met" if ok else "not met")


def goal_profile(R):
    d = R.data("profile")
    redisson = R.row("cycles", "redisson")
    if not d:
        return ("W4", "(W4) the page: each goal's verdict, a per-cycle profile before and after, "
                "Redisson's rows from the same run", "the profile step failed", "not met")
    before = any(r["impl"].endswith("-before") for r in d["rows"])
    ok = before and redisson is not None
    text = ("profile: " + ("before and after" if before else "after only (no earlier core "
                           "in this checkout)") + "; Redisson's rows: "
            + ("measured in this run" if redisson else NOT_YET))
    return ("W4", "(W4) the page: each goal's verdict, a per-cycle profile before and after, "
            "Redisson's rows from the same run", text, "met" if ok else "not met")


GOALS = (goal_wire_cycles, goal_wire_handoff, goal_fairness, goal_profile)


def goals(R):
    return [g for g in (f(R) for f in GOALS) if g]


def render(R):
    gs = goals(R)
    return {
        "wire_goals_table": table(["goal", "this run", "verdict"],
                                  [[g, t, f"**{v}**" if v in ("met", "not met") else v]
                                   for _, g, t, v in gs]),
        "wire_missed": ", ".join(f"({k})" for k, _, _, v in gs if v == "not met"),
    }
