"""Measure 1b: parallel cycles, T threads of one process, against the server's ceiling."""

from .fmt import COLOURS, NOT_YET, f2, n0, table

PLOT = "parallel"


def render(R):
    rpy, ceiling = R.row("parallel", "redis-py"), R.data("ceiling")
    rows = []
    if ceiling:
        rows.append(["server ceiling (redis-benchmark, EVALSHA)", n0(ceiling["cycles_per_s"]),
                     f"acquire {n0(ceiling['acquire_per_s'])}/s, release "
                     f"{n0(ceiling['release_per_s'])}/s", "", "1.00"])
    for r in R.rows("parallel"):
        rows.append([r["label"], n0(r["cycles_per_s"]),
                     f"{n0(r.get('per_thread_min'))} – {n0(r.get('per_thread_max'))}",
                     f2(rpy and r["cycles_per_s"] / rpy["cycles_per_s"]),
                     f2(ceiling and r["cycles_per_s"] / ceiling["cycles_per_s"])])
    if not R.has_redisson("parallel"):
        rows.append(["Redisson (Java)", NOT_YET, "", "", ""])
    return {
        "parallel_threads": R.p["parallel_threads"],
        "parallel_seconds": f"{R.p['parallel_seconds']:g}",
        "parallel_table": table(["", "cycles/s", "cycles per thread (min – max)", "× redis-py",
                                 "of the ceiling"], rows),
    }


def plot(R, plt):
    par, ceiling = R.rows("parallel"), R.data("ceiling")
    if not par:
        return None
    fig, ax = plt.subplots(figsize=(8, 2.8))
    ax.barh([r["label"] for r in par][::-1], [r["cycles_per_s"] for r in par][::-1],
            color=[COLOURS["redlease" if r["impl"].startswith("redlease") else "peer"]
                   for r in par][::-1])
    if ceiling:
        ax.axvline(ceiling["cycles_per_s"], color="black", linestyle="--", linewidth=1)
        ax.text(ceiling["cycles_per_s"], len(par) - 0.4, " server ceiling", fontsize=8,
                va="top", ha="right")
    ax.set_xlabel(f"acquire+release cycles per second, {R.p['parallel_threads']} threads")
    ax.set_title("1b. Parallel cycles, one process")
    return fig
