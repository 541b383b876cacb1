"""The smoke run's verdict: each measurement step that ran and gave sane output counts as
passed (the right fields, positive rates, as many samples as asked); the page and each plot
count too. Timing is never checked: a slow or noisy machine passes."""

import os

# the OpenResty rows against Sentinel and Cluster (bench/openresty/deployments.py): the polling
# lock against Sentinel's master only
DEPLOYMENT_ROWS = sorted([(dep, impl, w) for w in (1, 2) for dep, impl in
                          (("sentinel", "redlease"), ("sentinel", "polling"),
                           ("cluster", "redlease"))])


def pos(*xs):
    return all(isinstance(x, (int, float)) and x > 0 for x in xs)


def check_step(name, step, params):
    """Problems with one step's output ([] when sane)."""
    if not step.get("ok"):
        error = step.get("error")
        return [error.splitlines()[-1][:200] if error else "failed"]
    d, m = step["data"], step["measure"]
    rows = d.get("rows", [])
    if m not in ("ceiling",) and not rows:
        return ["no rows"]
    bad = []
    for r in rows:
        if m in ("limits", "core", "lua", "cycles", "parallel") and not pos(r["cycles_per_s"]):
            bad.append(f"{r.get('impl')}: cycles_per_s {r['cycles_per_s']}")
        if m == "handoff" and (len(r["latencies_ms"]) != params["handoffs"]
                               or not all(x > 0 for x in r["latencies_ms"])):
            bad.append(f"{r['impl']}: {len(r['latencies_ms'])} latencies")
        if m == "handoff" and r["impl"] == "redlease" and not pos(r.get("ping_rtt_ms"),
                                                                  r.get("acquire_rtt_ms")):
            bad.append("redlease: no wire round trips beside the hand-offs")
        if m == "handoff" and r["impl"] == "redlease" and not pos(r.get("bare_handoff_ms"),
                                                                  r.get("bare_handoff_apart_ms")):
            bad.append("redlease: no bare hand-offs beside the hand-offs")
        if m == "semaphore" and not (pos(r["cycles_per_s"])
                                     and len(r["latencies_ms"]) == params["handoffs"]
                                     and all(x > 0 for x in r["latencies_ms"])):
            bad.append(f"{r['impl']}: {r['cycles_per_s']} cycles/s, "
                       f"{len(r['latencies_ms'])} hand-offs")
        if m == "contended" and (len(r["per_worker"]) != r["workers"] or r["acquisitions"] <= 0
                                 or r["handoffs"] > r["acquisitions"]):
            bad.append(f"{r['impl']}: per-worker counts")
        if m == "contended" and r["impl"] != "redisson" and r["handoffs"] and not pos(
                r["handoff_p50_ms"], r["handoff_p99_ms"]):
            bad.append(f"{r['impl']}: hand-off latencies")
        # (a small run's CPU and task-switch differences are noise; its system calls are not)
        if m == "profile" and not (pos(r["syscalls"]) and all(
                k in r for k in ("task_switches", "client_cpu_us", "redis_cpu_us"))):
            bad.append(f"profile {r['impl']}: {r}"[:200])
        if m == "watchdog":
            # Redisson renews in its own batches: on a loaded machine a round seen by the tap
            # may cover only part of the holds; every hold still being live shows they were all
            # renewed.
            full = r["full_rounds"] >= 1 or (r["impl"] == "redisson"
                                             and r["live_keys"] == r["holds"])
            if not (r["rounds"] >= 1 and full and pos(r["round_ms_median"])
                    and r["round_trips_per_round"] > 0 and 0 <= r["live_keys"] <= r["holds"]
                    and (r["impl"] == "redisson"  # the core's memory figures only
                         or pos(r["bytes_per_lock_handle"], r["bytes_per_hold"]))):
                bad.append(f"{r['holds']} holds: {r}"[:200])
        if m == "callgrind" and not pos(r["instructions_per_op"], r["budget"], r["limit"]):
            bad.append(f"callgrind {r['impl']}: {r}"[:200])
        if m == "gil" and (len(r["points"]) != len(params["gil_waiters"])
                           or not all(pos(p["fraction"]) for p in r["points"])):
            bad.append(f"{r['impl']}: fractions")
        if m == "memory-python" and not (pos(r["lock_object"]["python_bytes"],
                                             r["lock_object"]["core_bytes"])
                                         and len(r["rss"]["samples"]) >= 2):
            bad.append("memory figures")
        if m in ("openresty", "openresty-deployments") and not (
                pos(r["requests_per_s"]) and r.get("worker_cpu_us", -1) >= 0
                if r["kind"] == "rps" else
                len(r["latencies_ms"]) == params["openresty_handoffs"]
                and all(x >= 0 for x in r["latencies_ms"])):
            bad.append(f"openresty {r['kind']} {r['impl']} {r.get('deployment', '')}".strip())
        if m == "aio-cycles" and not pos(r["cycles_per_s"]):
            bad.append(f"{r['impl']}: cycles_per_s {r['cycles_per_s']}")
        if m == "aio-waiting" and not (r["tasks"] > 0 and r["rss_per_task_bytes"] is not None
                                       and r["process_cpu_pct"] >= 0):
            bad.append(f"{r['impl']}: waiting figures")
        if m == "wait-threads" and not (r["threads"] > 0 and r["subscribed"] == r["threads"]
                                        and r["woken_at_end"] + r["done_early"] == r["threads"]
                                        and r["process_cpu_pct"] >= 0):
            bad.append(f"wait-threads: {r}"[:200])
        if m == "aio-handoff" and (len(r["latencies_ms"]) != params["handoffs"]
                                   or not all(x > 0 for x in r["latencies_ms"])):
            bad.append(f"{r['impl']}: {len(r['latencies_ms'])} latencies")
    if m == "profile" and not any(r["impl"].endswith("-before") for r in rows):
        bad.append("no rows of the earlier core (BENCH_BEFORE)")
    if m == "callgrind" and len(rows) != 4:
        bad.append(f"{len(rows)} callgrind rows, not 4")
    if m == "openresty-deployments" and sorted(
            (r["deployment"], r["impl"], r["workers"]) for r in rows) != DEPLOYMENT_ROWS:
        bad.append("openresty-deployments: not every deployment, lock and worker count")
    if m == "core" and len(d["handoff"]["latencies_ms"]) != params["c_handoffs"]:
        bad.append("core hand-offs")
    if m == "ceiling" and not pos(d.get("requests_per_s", d.get("cycles_per_s"))):
        bad.append("no rate")
    return bad


def record(results, report_problems, page, img, path=None):
    """Writes the smoke transcript ending in 'N passed, N failed'; returns the exit status."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = path or os.path.join(root, "build", "results", "bench-smoke.txt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines, passed, failed = [], 0, 0

    def count(name, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            lines.append(f"FAIL {name}: {'; '.join(problems)}")
        else:
            passed += 1
            lines.append(f"ok   {name}")

    for name, step in results["steps"].items():
        count(name, check_step(name, step, results["params"]))
    count("page", report_problems + ([] if os.path.getsize(page) > 1000 else ["page too short"]))
    for plot in ("cycles", "parallel", "handoff", "contended", "watchdog", "scale", "gil", "rss"):
        f = os.path.join(img, plot + ".png")
        drawn = os.path.exists(f) and os.path.getsize(f) > 1000
        count(f"plot {plot}", [] if drawn else ["missing"])
    lines.append(f"{passed} passed, {failed} failed")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0
