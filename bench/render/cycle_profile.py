"""Measure 1's profile: one cycle's system calls, task switches and CPU (perf stat), before and
after, beside the wire's limits."""

from .fmt import f2, n0, table


def f1(x):
    return "" if x is None else f"{x:.1f}"


def render(R):
    d = R.data("profile")
    if not d:
        failed = R.failed("profile")
        return {"profile": False, "profile_before_text": "", "profile_cycles": "",
                "profile_repeats": "",
                "profile_failed": R.steps[failed[0]]["error"] if failed else "not run"}
    rows = [[r["label"], f1(r["syscalls"]), f2(r["task_switches"]), f1(r["client_cpu_us"]),
             f1(r["redis_cpu_us"]), n0(r["cycles_per_s"]) if r["cycles_per_s"] else ""]
            for r in d["rows"]]
    return {
        "profile": True,
        "profile_cycles": f"{d['cycles']:,}",
        "profile_repeats": d["repeats"],
        "profile_before_text": (
            ", the same loop built against the core of an earlier commit (`BENCH_BEFORE` in "
            "`mk/bench.mk`: the one whose page named the costs this round went after, the unlock "
            "latch's DEL in a write of its own and a dozen signal-mask system calls per cycle)"
            if any(r["impl"].endswith("-before") for r in d["rows"]) else ""),
        "profile_table": table(["per cycle", "system calls", "task switches", "client CPU µs",
                                "Redis CPU µs", "cycles/s (under perf)"], rows),
    }
