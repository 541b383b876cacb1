"""Measure 3: one contended lock: hand-offs per second and fairness between workers."""

from .fmt import NOT_YET, f2, ms, n0, table

PLOT = "contended"


def render(R):
    p, con = R.p, R.rows("contended")
    rows = []
    for wk in p["contended_workers"]:
        for r in con:
            if r["workers"] == wk:
                rows.append([wk, r["label"], n0(r["handoffs_per_s"]), n0(r["acquisitions_per_s"]),
                             f"{r['per_worker_min']:,} / {r['per_worker_max']:,}",
                             f2(r["per_worker_min"] / max(1, r["per_worker_max"])),
                             ms(r.get("handoff_p50_ms")), ms(r.get("handoff_p99_ms"))])
        if not R.has_redisson("contended", workers=wk):
            rows.append([wk, "Redisson (Java)", NOT_YET, "", "", "", "", ""])
    return {
        "contended_workers": ", ".join(map(str, p["contended_workers"])),
        "contended_procs": p["contended_procs"],
        "contended_seconds": f"{p['contended_seconds']:g}",
        "contended_table": table(["workers", "", "hand-offs/s", "acquisitions/s",
                                  "per worker min / max", "min / max", "hand-off p50 ms",
                                  "p99"], rows),
    }


def plot(R, plt):
    con = R.rows("contended")
    if not con:
        return None
    impls = list(dict.fromkeys(r["label"] for r in con))
    workers = R.p["contended_workers"]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(impls)
    for k, label in enumerate(impls):
        vals = [next((r["handoffs_per_s"] for r in con if r["label"] == label
                      and r["workers"] == w), 0) for w in workers]
        ax.bar([i + k * width for i in range(len(workers))], vals, width, label=label)
    ax.set_xticks([i + width * (len(impls) - 1) / 2 for i in range(len(workers))])
    ax.set_xticklabels([f"{w} workers" for w in workers])
    ax.set_yscale("log")
    ax.set_ylabel("hand-offs per second (log)")
    ax.set_title(f"3. One contended lock, workers over {R.p['contended_procs']} processes")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
    return fig
