"""Measure 5: GIL friendliness: a CPU-bound thread's rate while other threads wait on locks."""

from .fmt import f2, one_of, table

PLOT = "gil"


def render(R):
    rows = [[r["label"]] + [f2(pt["fraction"]) for pt in r["points"]] for r in R.rows("gil")]
    return {
        "gil_seconds": f"{R.p['gil_seconds']:g}",
        "gil_waiters": one_of(R.p["gil_waiters"]),
        "gil_table": table(["waiters →"] + [str(x) for x in R.p["gil_waiters"]], rows),
    }


def plot(R, plt):
    gil = R.rows("gil")
    if not gil:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for r in gil:
        ax.plot([p["waiters"] for p in r["points"]], [p["fraction"] for p in r["points"]],
                "o-", label=r["label"], linewidth=2 if r["impl"] == "redlease" else 1.2)
    ax.axhline(0.9, color="black", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("threads waiting on held locks")
    ax.set_ylabel("CPU-bound thread, fraction of solo")
    ax.set_title("5. GIL friendliness")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig
