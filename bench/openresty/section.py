"""The OpenResty section of the benchmark page, from the "openresty" step of a run (written by
bench/openresty/run.py). Kept apart from bench/report.py, which only calls section(results)."""

import statistics


def _pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def section(results):
    step = results["steps"].get("openresty")
    out = ["## 7. OpenResty: a lock per request in nginx\n"]
    if not step or not step.get("ok"):
        out.append("Not measured in this run" + (f" (failed: {step.get('error', '')[-160:]})"
                                                  if step else "") + ".\n")
        return "\n".join(out)
    d = step["data"]
    rps = {(r["impl"], r["workers"]): r for r in d["rows"] if r["kind"] == "rps"}
    conns = next(iter(rps.values()))["connections"]
    secs = next(iter(rps.values()))["seconds"]
    out.append(f"`wrk -t1 -c{conns} -d{secs}s` against one nginx on loopback (Debian's nginx and Lua "
               "module, `worker_processes` 1 and 2), each connection locking a name of its own "
               "(one acquire and one release per request, fixed 30 s lease), on the same 2 cores as "
               "Redis and wrk. The polling lock is the usual hand-written one: `SET name token NX "
               f"PX 30000`, retried every {d['poll_step_s'] * 1000:.0f} ms with `ngx.sleep`, released "
               "by a compare-and-delete script. Command: `bench/openresty/run.py` (`make bench`).\n")
    out.append("| workers | empty handler (limit), req/s | redlease, req/s | share of the limit | "
               "polling lock, req/s |")
    out.append("|---|---|---|---|---|")
    for w in (1, 2):
        e, r, p = rps[("empty", w)], rps[("redlease", w)], rps[("polling", w)]
        out.append(f"| {w} | {e['requests_per_s']:,.0f} | {r['requests_per_s']:,.0f} | "
                   f"{r['requests_per_s'] / e['requests_per_s']:.2f} | {p['requests_per_s']:,.0f} |")
    out.append("")
    ho = {r["impl"]: r["latencies_ms"] for r in d["rows"] if r["kind"] == "handoff"}
    red, pol = statistics.median(ho["redlease"]), statistics.median(ho["polling"])
    out.append(f"Hand-off between two requests of one worker ({len(ho['redlease'])} rounds each: "
               "the holder keeps the lock 50 ms, the waiter arrives at a random point meanwhile; "
               "latency = the waiter's acquire minus the holder's release start):\n")
    out.append("| lock | p50 ms | p90 ms | max ms |")
    out.append("|---|---|---|---|")
    for name, lat in (("redlease (pub/sub wake-up)", ho["redlease"]),
                      ("polling lock", ho["polling"])):
        out.append(f"| {name} | {statistics.median(lat):.2f} | {_pct(lat, 0.9):.2f} | "
                   f"{max(lat):.2f} |")
    out.append("")
    share = rps[("redlease", 1)]["requests_per_s"] / rps[("empty", 1)]["requests_per_s"]
    out.append(f"Goals (issue 14): lock+unlock per request at ≥ 0.5 of the empty handler's "
               f"requests/s: **{'met' if share >= 0.5 else 'not met'}** ({share:.2f} with one "
               f"worker); hand-off p50 ≥ 20× better than the polling lock: "
               f"**{'met' if pol >= 20 * red else 'not met'}** ({pol / red:.0f}×).\n")
    return "\n".join(out)
