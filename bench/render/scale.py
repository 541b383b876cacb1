"""How cost grows (issue 32, goal 4): the watchdog and the core's bytes per held lock from 1,000
to 1,000,000 holds in one client, many waiting asyncio tasks and threads, and a picture of cost
against N."""

from .fmt import n0, table

PLOT = "scale"
BIG = 1000000
GOAL_BYTES = 300
GOAL_CPU = 0.05  # of one core, over the round's period
AIO_TASKS, THREADS = 100000, 10000


def core_rows(R):
    """The C core's watchdog rows of every watchdog step, by holds; each with its period."""
    rows = []
    for r in R.rows("watchdog"):
        if r["impl"] != "redlease-c":
            continue
        period = R.steps[r["_step"]]["data"]["period_ms"]
        rows.append(dict(r, period_ms=period))
    return sorted(rows, key=lambda r: r["holds"])


def verdict(ok, measured=True):
    return "not measured at this size" if not measured else "met" if ok else "not met"


def goal_million(R):
    rows = core_rows(R)
    if not rows:
        return None
    big = rows[-1]
    period = big["period_ms"]
    cpu = big["round_cpu_ms_median"] / period
    lost = big["lost"] + big["lost_events"]
    ok = big["round_ms_median"] <= period and cpu <= GOAL_CPU and lost == 0 \
        and big["live_keys"] == big["holds"]
    return ["(4) 1,000,000 holds in one client: a round within its period, ≤ 5% of a core, 0 lost",
            f"{n0(big['holds'])} holds, period {period / 1000:g} s: round "
            f"{big['round_ms_median']:.0f} ms ({100 * big['round_ms_median'] / period:.0f}% of "
            f"the period), CPU {big['round_cpu_ms_median']:.0f} ms = {100 * cpu:.2f}% of a core; "
            f"{big['round_trips_per_round']:.0f} round trip(s), {lost} lost, "
            f"{n0(big['live_keys'])} live keys",
            verdict(ok, big["holds"] >= BIG)]


def goal_bytes(R):
    rows = core_rows(R)
    if not rows:
        return None
    big = rows[-1]
    b = big["bytes_per_held_lock"]
    return ["(4) ≤ 300 bytes per held lock in the core",
            f"{n0(big['holds'])} holds: {b:.0f} bytes (lock handle "
            f"{big['bytes_per_lock_handle']:.0f} + hold {big['bytes_per_hold']:.0f})",
            verdict(0 < b <= GOAL_BYTES, big["holds"] >= BIG)]


def goal_tasks(R):
    r = R.row("aio-waiting", "redlease-asyncio")
    if not r:
        return None
    return ["(4) 100,000 waiting asyncio tasks: their CPU and memory",
            f"{n0(r['tasks'])} tasks: loop thread {r['loop_cpu_pct']:.2f}% and process "
            f"{r['process_cpu_pct']:.2f}% of a core while they wait, "
            f"{r['rss_per_task_bytes'] / 1024:.2f} KiB RSS per task",
            "measured" if r["tasks"] >= AIO_TASKS else "not measured at this size"]


def goal_threads(R):
    r = R.row("wait-threads", "redlease")
    if not r:
        return None
    return ["(4) 10,000 waiting threads: their CPU and memory",
            f"{n0(r['threads'])} threads: process {r['process_cpu_pct']:.2f}% of a core while "
            f"they wait, {r['rss_per_thread_bytes'] / 1024:.1f} KiB RSS per thread "
            f"({r['stack_kib']} KiB stacks)",
            "measured" if r["threads"] >= THREADS else "not measured at this size"]


def render(R):
    goals = [g for g in (goal_million(R), goal_bytes(R), goal_tasks(R), goal_threads(R)) if g]
    wt = R.row("wait-threads", "redlease")
    return {
        "scale_goals_table": table(["goal (issue 32)", "this run", "verdict"],
                                   [[g, t, f"**{v}**" if v in ("met", "not met") else v]
                                    for g, t, v in goals]),
        "wait_threads": bool(wt),
        "wait_threads_table": table(
            ["threads", "all waiting after", "process CPU % while waiting", "KiB RSS per thread",
             "woken early", "woken at the end"],
            [[n0(wt["threads"]), f"{wt['start_s']:.1f} s", f"{wt['process_cpu_pct']:.2f}",
              f"{wt['rss_per_thread_bytes'] / 1024:.1f}", n0(wt["done_early"]),
              n0(wt["woken_at_end"])]]) if wt else "",
    }


def plot(R, plt):
    rows = core_rows(R)
    if not rows:
        return None
    holds = [r["holds"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    left.plot(holds, [100 * r["round_ms_median"] / r["period_ms"] for r in rows], "o-",
              label="round duration (wall)")
    left.plot(holds, [100 * r["round_cpu_ms_median"] / r["period_ms"] for r in rows], "s-",
              label="round CPU (watchdog thread)")
    left.axhline(100 * GOAL_CPU, color="black", linestyle=":", linewidth=1)
    left.text(holds[0], 100 * GOAL_CPU, " 5% of a core", fontsize=8, va="bottom")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("holds in one client")
    left.set_ylabel("% of the round's period")
    left.set_title("Renewal round against N")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    right.plot(holds, [r["bytes_per_held_lock"] for r in rows], "o-", label="held lock")
    right.plot(holds, [r["bytes_per_hold"] for r in rows], "s-", label="hold")
    right.plot(holds, [r["bytes_per_lock_handle"] for r in rows], "^-", label="lock handle")
    right.axhline(GOAL_BYTES, color="black", linestyle=":", linewidth=1)
    right.text(holds[0], GOAL_BYTES, " 300 bytes", fontsize=8, va="bottom")
    right.set_xscale("log")
    right.set_ylim(bottom=0)
    right.set_xlabel("holds in one client")
    right.set_ylabel("bytes in the core")
    right.set_title("Memory against N")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    return fig
