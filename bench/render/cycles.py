"""Measure 1: uncontended cycles, one thread: C, Python and Lua rows against the two limits."""

from .fmt import COLOURS, NOT_YET, f2, n0, table

PLOT = "cycles"
LUA_NAMES = {"lua5.4": "Lua 5.4", "luajit": "LuaJIT"}


def cycles_rows(R):
    """(label, cycles/s, kind, of the bare loop, of two PINGs, paired) for every row. Paired
    ratios come from bursts run beside the limits in one process (C, Python); the others (Lua, a
    library measured elsewhere) are divided by the limits' own medians."""
    ping, bare = R.limits()
    rows = []

    def add(label, r, kind):
        if r["impl"] in ("ping", "bare-scripts"):
            return
        if "of_bare" in r:
            rows.append((label, r["cycles_per_s"], kind, r["of_bare"], r["of_ping"], True))
        else:
            rows.append((label, r["cycles_per_s"], kind, bare and r["cycles_per_s"] / bare,
                         ping and r["cycles_per_s"] / ping, False))
    core = R.data("core")
    if core:
        for r in core["rows"]:
            add(r["label"], r, "redlease")
    for r in R.rows("cycles"):
        add(r["label"] + (", watchdog" if r["impl"] == "redlease" else ""), r,
            "redlease" if r["impl"].startswith("redlease") else "peer")
    for name, s in R.steps.items():
        if s.get("measure") == "lua" and s.get("ok"):
            interp = name.split("-", 1)[1]
            for r in s["data"]["rows"]:
                label = r["label"].replace(s["data"]["interpreter"],
                                           "redlease " + LUA_NAMES.get(interp, interp))
                add(label, r, "redlease")
    return rows


def render(R):
    p = R.p
    ping, bare = R.limits()
    rows = []
    if ping:
        rows.append(["limit: two PING round trips", n0(ping), "1.00",
                     f2(ping and bare and bare / ping)])
        rows.append(["limit: bare-hiredis script loop", n0(bare), f2(bare / ping), "1.00"])
    for label, rate, _, of_bare, of_ping, paired in cycles_rows(R):
        mark = "" if paired else " †"
        rows.append([label, n0(rate), f2(of_ping) + mark, f2(of_bare) + mark])
    if not R.has_redisson("cycles"):
        rows.append(["Redisson (Java)", NOT_YET, "", ""])
    limits = R.data("limits")
    return {
        "cycle_bursts": p["cycle_bursts"], "burst_cycles": n0(p["cycles"] // p["cycle_bursts"]),
        "limit_runs": limits["runs"] if limits else 0,
        "cycles_table": table(["acquire+release, one thread", "cycles/s", "of two PINGs",
                               "of the script loop"], rows),
        "cycles_unpaired": any(not r[5] for r in cycles_rows(R)),
    }


def plot(R, plt):
    rows = cycles_rows(R)
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.6))
    labels = [r[0] + ("" if r[5] else " †") for r in rows][::-1]
    ax.barh(labels, [r[3] or 0 for r in rows][::-1], color=[COLOURS[r[2]] for r in rows][::-1])
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
    ax.axvline(0.9, color="black", linestyle=":", linewidth=1)
    ax.text(1.0, len(rows) - 0.4, " bare loop", fontsize=8, va="top")
    ax.text(0.9, len(rows) - 0.4, "goal ", fontsize=8, va="top", ha="right")
    ax.set_xlabel("acquire+release cycles, as a fraction of the bare script loop (median)")
    ax.set_title("1. Uncontended cycle, one thread")
    return fig
