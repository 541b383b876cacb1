"""Measure 4: watchdog scale: renewal rounds over N holds in one client (C core; Redisson)."""

from .fmt import NOT_YET, f2, ms, n0, na, table

PLOT = "watchdog"
DEFAULT_TIMEOUT_MS = 30000  # the core's watchdog timeout when none is given (rl_options_init)


def row(R, r, period_ms):
    g = r.get  # a library measured elsewhere may lack some figures
    period = R.steps[r["_step"]]["data"].get("period_ms", period_ms)
    lost = None if g("lost") is None and g("lost_events") is None else \
        (g("lost") or 0) + (g("lost_events") or 0)
    return [("Redisson: " if r["impl"] == "redisson" else "") + na(n0, g("holds")),
            na(lambda x: f"{x:.2f} s", g("acquire_s")),
            na(ms, g("round_ms_median")), na(ms, g("round_net_ms_median")),
            na(f2, g("round_trips_per_round")), na(n0, g("calls_per_round")),
            na(ms, g("round_cpu_ms_median")),
            na(lambda x: f"{100 * x / period:.2f}%", g("round_cpu_ms_median")),
            na(ms, g("process_cpu_ms_per_round")), na(n0, g("full_rounds")),
            na(n0, lost), na(n0, g("live_keys"))]


def render(R):
    wd = R.data("watchdog")
    if not wd:
        return {"watchdog": False, "watchdog_failed": "; ".join(R.failed("watchdog"))}
    rows = [row(R, r, wd["period_ms"]) for r in R.rows("watchdog")]
    redisson = R.has_redisson("watchdog")
    if not redisson:
        rows.append(["Redisson (Java)", NOT_YET] + [""] * 10)
    return {
        "watchdog": True, "watchdog_redisson": redisson, "wd_periods": R.p["wd_periods"],
        "wd_timeout_s": f"{wd['watchdog_timeout_ms'] / 1000:g}",
        "wd_period_s": f"{wd['period_ms'] / 1000:g}",
        "wd_default_ratio": f"{DEFAULT_TIMEOUT_MS / wd['watchdog_timeout_ms']:g}",
        "watchdog_table": table(["holds", "taking them", "round ms (median)", "of which Redis",
                                 "round trips/round", "script calls/round", "round CPU ms",
                                 "CPU / period", "process CPU ms/round", "rounds timed", "lost",
                                 "live keys"], rows),
    }


def plot(R, plt):
    wd = R.data("watchdog")
    if not wd:
        return None
    rows = wd["rows"]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    holds = [r["holds"] for r in rows]
    ax.plot(holds, [r["round_ms_median"] for r in rows], "o-", label="round duration (wall)")
    ax.plot(holds, [r["round_cpu_ms_median"] for r in rows], "s-",
            label="round CPU (watchdog thread)")
    ax.axhline(wd["period_ms"] * 0.1, color="black", linestyle=":", linewidth=1)
    ax.text(holds[0], wd["period_ms"] * 0.1, " 10% of the period", fontsize=8, va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("holds in one client")
    ax.set_ylabel("ms per renewal round")
    ax.set_title("4. Watchdog scale")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
