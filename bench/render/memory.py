"""Measure 6: memory: the core's bytes per held lock (from the watchdog run), and the Python
side's bytes per Lock object and RSS over many cycles."""

from .fmt import n0, table

PLOT = "rss"


def render(R):
    wd = R.data("watchdog")
    out = {"memory_core": bool(wd), "memory_python": False}
    if wd:
        core = sorted((r for r in R.rows("watchdog") if r["impl"] == "redlease-c"),
                      key=lambda r: r["holds"])  # every watchdog step: up to a million holds
        rows = [[n0(r["holds"]), f"{r['bytes_per_lock_handle']:.0f}", f"{r['bytes_per_hold']:.0f}",
                 f"{r['bytes_per_held_lock']:.0f}"] for r in core]
        out["memory_table"] = table(["holds", "bytes per lock handle", "bytes per hold",
                                     "bytes per held lock"], rows)
    mem = R.row("memory-python", "redlease")
    if mem:
        lo, rs = mem["lock_object"], mem["rss"]
        flat = abs(rs["growth_after_warmup_kb"]) <= max(1024, 0.02 * rs["rss_at_10pct_kb"])
        out.update({
            "memory_python": True, "lock_objects": n0(lo["objects"]),
            "python_bytes": f"{lo['python_bytes']:.0f}", "core_bytes": f"{lo['core_bytes']:.0f}",
            "total_bytes": f"{lo['total_bytes']:.0f}", "rss_cycles": n0(rs["cycles"]),
            "rss_threads": rs["threads"], "rss_seconds": f"{rs['seconds']:.0f}",
            "rss_start": f"{rs['rss_start_kb'] / 1024:.1f}",
            "rss_10pct": f"{rs['rss_at_10pct_kb'] / 1024:.1f}",
            "rss_end": f"{rs['rss_end_kb'] / 1024:.1f}",
            "rss_max": f"{rs['rss_max_kb'] / 1024:.1f}",
            "rss_verdict": "**flat**" if flat else "**not flat**",
            "rss_growth": f"{rs['growth_after_warmup_kb']:+,}",
        })
    return out


def plot(R, plt):
    mem = R.row("memory-python", "redlease")
    if not mem:
        return None
    s = mem["rss"]["samples"]
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    ax.plot([c for c, _ in s], [r / 1024 for _, r in s], "-")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("acquire+release cycles")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title("6. Python process RSS over cycles")
    ax.grid(True, alpha=0.3)
    return fig
