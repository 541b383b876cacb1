"""The closing notes: the cause of each goal the run missed (their text is in the template, one
section per goal: cause_1, cause_1b, ..., cause_W1, ...), with this run's figures."""

import statistics

from . import third_round, wire_goals
from .fmt import f2, ms
from .goals import missed

# goals whose causes the template has
EXPLAINED = ("1", "1b", "2", "3", "5", "6", "W1", "W2", "W3", "T1", "T2", "T3")


def wire_figures(R):
    """The figures the (W1) and (W2) notes quote."""
    out = {"bare_of_ping": "–", "redis_scripts_us": "–", "redis_ping_us": "–",
           "py_of_bare": "–", "c_of_bare": "–", "w2_bare_text": ""}
    ping, bare = R.limits()
    if ping and bare:
        out["bare_of_ping"] = f2(bare / ping)
    prof = R.data("profile")
    if prof:
        by = {r["impl"]: r for r in prof["rows"]}
        if "bare-scripts" in by and "ping" in by:
            out["redis_scripts_us"] = f"{by['bare-scripts']['redis_cpu_us']:.1f}"
            out["redis_ping_us"] = f"{by['ping']['redis_cpu_us']:.1f}"
    py = R.row("cycles", "redlease")
    if py and "of_bare" in py:
        out["py_of_bare"] = f2(py["of_bare"])
    core = R.data("core")
    fixed = core and next((r for r in core["rows"] if r["impl"] == "redlease-c-fixed"), None)
    if fixed and "of_bare" in fixed:
        out["c_of_bare"] = f2(fixed["of_bare"])
    busy = max(R.p["contended_workers"])
    con, ho = R.row("contended", "redlease", workers=busy), R.row("handoff", "redlease")
    if ho and ho.get("bare_handoff_ms") and ho.get("ping_rtt_ms"):
        floor = ho["ping_rtt_ms"] + ho["acquire_rtt_ms"]
        out["w2_bare_text"] = (
            f" In this run a bare hand-off (the same two scripts and the release's message on "
            f"three hiredis connections driven by one thread, no client around them) took "
            f"{ms(ho['bare_handoff_ms'])} ms at the median, {ho['bare_handoff_ms'] / floor:.2f} × "
            f"(PING + acquire round trip): the message cannot leave Redis before the release "
            f"script has run, and Redis writes it in the same pass as the release's own answer, "
            f"so the wire itself takes about a release round trip plus an acquire round trip"
            + (", more than the goal allows any client." if ho["bare_handoff_ms"] > 1.2 * floor
               else ".") + f" redlease's Python hand-off took "
            f"{ms(statistics.median(ho['latencies_ms']))} ms, "
            f"{statistics.median(ho['latencies_ms']) / ho['bare_handoff_ms']:.2f} × the bare "
            f"one.")
    long_tail = con and ho and con.get("handoff_p99_ms") is not None and (
        con["handoff_p99_ms"] > 3 * statistics.median(ho["latencies_ms"]))
    out["w2_tail_text"] = "" if not long_tail else (
        f" Under {busy} contending workers the tail is the machine's two cores shared by {busy} "
        f"threads, {R.p['contended_procs']} processes and Redis: a woken worker waits for a core.")
    return out


def gil_figures(R):
    """The figures the (5) note quotes: the solo runs' own spread beside the fractions."""
    most = max(R.p["gil_waiters"])
    out = {"gil_text": "", "gil_wakeups": f"{most} waiters cost the counting thread no wake-ups "
           f"while they wait."}
    row = R.row("gil", "redlease")
    if not row or len(row.get("solo_rates", [])) < 2 or not row.get("points"):
        return out
    solos, last = row["solo_rates"], row["points"][-1]
    peers = [(r["label"], r["points"][-1]["fraction"]) for r in R.rows("gil")
             if r["impl"] != "redlease" and r.get("points")]
    out["gil_text"] = (
        f"In this run redlease's {len(solos)} solo runs counted "
        + ", ".join(f"{x / 1e6:.1f}" for x in solos)
        + f" million iterations/s: the machine's own speed moved by "
        f"{(max(solos) - min(solos)) / max(solos):.0%} between runs of the same loop, and the "
        f"solo run just after the {last['waiters']}-waiter run was "
        f"{solos[-1] / solos[-2]:.2f} of the one just before it. At {last['waiters']} waiters "
        f"redlease's thread made {last['fraction']:.2f} of its solo rate"
        + ("; " + ", ".join(f"{label}: {f:.2f}" for label, f in peers) if peers else "")
        + ".")
    return out


def render(R):
    miss = missed(R) + [k for k, _, _, v in wire_goals.goals(R) + third_round.goals(R)
                        if v == "not met"]
    out = {f"cause_{k}": k in miss for k in EXPLAINED}
    out["causes"] = any(k in miss for k in EXPLAINED)
    out.update(wire_figures(R))
    out.update(gil_figures(R))
    return out
