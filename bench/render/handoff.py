"""Measure 2: hand-off latency, from the holder's release to the waiter holding the lock."""

import statistics

from .fmt import NOT_YET, f2, ms, pct, table

PLOT = "handoff"
WIRE_BLOCKS, WIRE_ROUNDS = 5, 800  # bench/python/handoff.py's: blocks, round trips per block


def series(R, two_processes=""):
    """(label, latencies in ms) per library, the C core's row second."""
    out = [(r["label"] + (two_processes if r["impl"] == "redlease" else ""), r["latencies_ms"])
           for r in R.rows("handoff")]
    core = R.data("core")
    if core:
        out.insert(1, (core["handoff"]["label"], core["handoff"]["latencies_ms"]))
    return out


def render(R):
    ho = R.rows("handoff")
    base = next((statistics.median(r["latencies_ms"]) for r in ho if r["impl"] == "redlease"),
                None)
    rows = []
    for label, lat in series(R, ", two processes"):
        med = statistics.median(lat)
        rows.append([label, ms(med), ms(pct(lat, 0.9)), ms(pct(lat, 0.99)), ms(max(lat)),
                     len(lat), f2(base and med / base)])
    if not R.has_redisson("handoff"):
        rows.append(["Redisson (Java)", NOT_YET, "", "", "", "", ""])
    wire = next((r for r in ho if r["impl"] == "redlease" and "ping_rtt_ms" in r), None)
    return {
        "handoff_wire_text": "" if not wire else (
            f" Between redlease's rounds (in {wire.get('wire_blocks', WIRE_BLOCKS)} blocks, each "
            f"after a block of these measures, so that a slow moment of the machine weighs on "
            f"both) the holder also measured the wire on bare hiredis connections of its own "
            f"process ({WIRE_ROUNDS:,} round trips a block): one PING round trip took "
            f"{ms(wire['ping_rtt_ms'])} ms and one round trip of the acquire script "
            f"{ms(wire['acquire_rtt_ms'])} ms, "
            f"{ms(wire['ping_rtt_ms'] + wire['acquire_rtt_ms'])} ms together: the goal's floor "
            f"for a hand-off (the release's message reaching the waiter, then its acquire)."
            + ("" if not wire.get("bare_handoff_ms") else
               f" It also ran {WIRE_ROUNDS // 2:,} bare hand-offs a block: the "
               f"same release and acquire scripts and the release's message on three hiredis "
               f"connections driven by one thread, with no client around them "
               f"(`bl_handoff` in `bench/c/bare_loop.c`); their median, "
               f"{ms(wire['bare_handoff_ms'])} ms, is the least a hand-off over this wire "
               f"takes.")
            + ("" if not wire.get("bare_handoff_apart_ms") else
               f" And as many bare hand-offs a block as redlease's with the waiter in a process "
               f"of its own, asleep in its read until the release's message wakes it, as a "
               f"waiting client in another process is (`bl_handoff_apart`, the same settle "
               f"time): median {ms(wire['bare_handoff_apart_ms'])} ms.")),
        "handoffs": R.p["handoffs"],
        "handoff_table": table(["", "median ms", "p90", "p99", "max", "hand-offs",
                                "median / redlease's"], rows),
    }


def plot(R, plt):
    if not R.rows("handoff"):
        return None
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for label, lat in series(R):
        lat = sorted(lat)
        ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], label=label,
                linewidth=2 if label.startswith("redlease") else 1.2)
    ax.set_xscale("log")
    ax.set_xlabel("release → waiter holds it (ms, log scale)")
    ax.set_ylabel("fraction of hand-offs")
    ax.set_title("2. Hand-off latency, CDF")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
