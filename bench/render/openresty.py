"""Measure 7: OpenResty, a lock per request in nginx (the "openresty" step, written by
bench/openresty/run.py): wrk requests/s for an empty handler, redlease and a polling lock with 1
and 2 workers, and the hand-off between two requests of one worker; the per-request rows against
Sentinel and Cluster beside one Redis's (the "openresty-deployments" step,
bench/openresty/deployments.py); issue 14's goals and issue 30's goal 4 (redlease's requests/s
at least the polling lock's, one Redis, 1 and 2 workers, this run)."""

import statistics

from .fmt import n0, pct, table, verdict

WORKERS = (1, 2)
DEPLOYMENTS = (("one Redis", "one"), ("Sentinel: master, replica, 3 sentinels", "sentinel"),
               ("Cluster: 3 masters", "cluster"))


def cpu(row):
    return "–" if row is None or row.get("worker_cpu_us") is None else f"{row['worker_cpu_us']:.0f}"


def deployment_table(rps, deps):
    """One row per deployment and worker count: redlease's and the polling lock's requests/s
    and worker CPU per request, and their ratio."""
    by = dict(rps)
    for r in deps["rows"] if deps else ():
        by[(r["impl"], r["workers"], r["deployment"])] = r
    rows = []
    for label, dep in DEPLOYMENTS:
        for w in WORKERS:
            key = (w,) if dep == "one" else (w, dep)
            r, p = by.get(("redlease", *key)), by.get(("polling", *key))
            if r is None:
                continue
            rows.append([label, w, n0(r["requests_per_s"]), cpu(r),
                         n0(p["requests_per_s"]) if p else "–", cpu(p),
                         f"{r['requests_per_s'] / p['requests_per_s']:.2f}" if p else "–"])
    return table(["deployment", "workers", "redlease, req/s", "worker CPU µs/request",
                  "polling lock, req/s", "worker CPU µs/request", "redlease / polling"], rows)


def round_ratios(r, p):
    """redlease / polling lock of each alternated round (run.py --rounds), or [] for a run that
    measured each once."""
    a, b = r.get("rounds_requests_per_s"), p.get("rounds_requests_per_s")
    return [x / y for x, y in zip(a, b)] if a and b and len(a) == len(b) else []


def goal_per_request(rps):
    """Issue 30, goal 4: redlease's requests/s ≥ the polling lock's, 1 and 2 workers: the median
    of the rounds' ratios where the run alternated them, else the ratio of the two rows; with the
    bare format's ratio to the polling lock beside it, where it ran (the format's own cost)."""
    parts, ok = [], True
    for w in WORKERS:
        rr, pr = rps[("redlease", w)], rps[("polling", w)]
        r, p = rr["requests_per_s"], pr["requests_per_s"]
        b = rps.get(("bare", w))
        ratios = round_ratios(rr, pr)
        ratio = statistics.median(ratios) if ratios else r / p
        ok = ok and ratio >= 1
        rounds = (f" (the median of {len(ratios)} alternated rounds: "
                  f"{', '.join(f'{x:.2f}' for x in ratios)})" if len(ratios) > 1 else "")
        bare = (f"; the bare format {n0(b['requests_per_s'])}, "
                f"{b['requests_per_s'] / p:.2f}" if b else "")
        parts.append(f"{w} worker{'s' if w > 1 else ''}: {n0(r)} against {n0(p)} req/s, "
                     f"{ratio:.2f}{rounds}{bare}")
    return verdict(ok), "; ".join(parts)


def render(R):
    d = R.data("openresty")
    deps = R.data("openresty-deployments")
    out = {"openresty": bool(d), "openresty_failed": bool(R.failed("openresty")),
           "openresty_deployments": bool(deps),
           "openresty_deployments_missing": (
               "The Sentinel and Cluster rows' step failed in this run (see [the steps that "
               "failed](#steps-that-failed-in-this-run)): one Redis only."
               if R.failed("openresty-deployments")
               else "Sentinel and Cluster not measured in this run: one Redis only.")}
    if not d:
        return out
    rps = {(r["impl"], r["workers"]): r for r in d["rows"] if r["kind"] == "rps"}
    first = next(iter(rps.values()))
    rows = []
    for w in WORKERS:
        e, r, p = rps[("empty", w)], rps[("redlease", w)], rps[("polling", w)]
        b = rps.get(("bare", w))  # (runs before the bare row's step have none)
        rows.append([w, f"{e['requests_per_s']:,.0f}", f"{r['requests_per_s']:,.0f}",
                     f"{r['requests_per_s'] / e['requests_per_s']:.2f}",
                     f"{p['requests_per_s']:,.0f}",
                     f"{b['requests_per_s']:,.0f} ({cpu(b)} µs)" if b else "–",
                     f"{r['requests_per_s'] / b['requests_per_s']:.2f}" if b else "–"])
    ho = {r["impl"]: r["latencies_ms"] for r in d["rows"] if r["kind"] == "handoff"}
    ho_rows = [[name, f"{statistics.median(lat):.2f}", f"{pct(lat, 0.9):.2f}", f"{max(lat):.2f}"]
               for name, lat in (("redlease (pub/sub wake-up)", ho["redlease"]),
                                 ("polling lock", ho["polling"]))]
    red, pol = statistics.median(ho["redlease"]), statistics.median(ho["polling"])
    share = rps[("redlease", 1)]["requests_per_s"] / rps[("empty", 1)]["requests_per_s"]
    per_request, per_request_figures = goal_per_request(rps)
    out.update({
        "openresty_connections": first["connections"],
        "openresty_seconds": first["seconds"],
        "openresty_lock_rounds": len(rps[("redlease", 1)].get("rounds_requests_per_s", [0])),
        "openresty_poll_ms": f"{d['poll_step_s'] * 1000:.0f}",
        "openresty_rps_table": table(["workers", "empty handler (limit), req/s", "redlease, req/s",
                                      "share of the limit", "polling lock, req/s",
                                      "bare format, req/s (worker CPU)",
                                      "redlease / bare format"], rows),
        "openresty_rounds": len(ho["redlease"]),
        "openresty_handoff_table": table(["lock", "p50 ms", "p90 ms", "max ms"], ho_rows),
        "openresty_share": f"{share:.2f}",
        "openresty_share_verdict": "met" if share >= 0.5 else "not met",
        "openresty_handoff_x": f"{pol / red:.0f}",
        "openresty_handoff_verdict": "met" if pol >= 20 * red else "not met",
        "openresty_deployment_table": deployment_table(rps, deps),
        "openresty_per_request_verdict": per_request,
        "openresty_per_request_figures": per_request_figures,
    })
    return out
