"""Measure 7: OpenResty, a lock per request in nginx (the "openresty" step, written by
bench/openresty/run.py): wrk requests/s for an empty handler, redlease and a polling lock with 1
and 2 workers, and the hand-off between two requests of one worker."""

import statistics

from .fmt import pct, table

WORKERS = (1, 2)


def render(R):
    d = R.data("openresty")
    out = {"openresty": bool(d), "openresty_failed": bool(R.failed("openresty"))}
    if not d:
        return out
    rps = {(r["impl"], r["workers"]): r for r in d["rows"] if r["kind"] == "rps"}
    first = next(iter(rps.values()))
    rows = []
    for w in WORKERS:
        e, r, p = rps[("empty", w)], rps[("redlease", w)], rps[("polling", w)]
        rows.append([w, f"{e['requests_per_s']:,.0f}", f"{r['requests_per_s']:,.0f}",
                     f"{r['requests_per_s'] / e['requests_per_s']:.2f}",
                     f"{p['requests_per_s']:,.0f}"])
    ho = {r["impl"]: r["latencies_ms"] for r in d["rows"] if r["kind"] == "handoff"}
    ho_rows = [[name, f"{statistics.median(lat):.2f}", f"{pct(lat, 0.9):.2f}", f"{max(lat):.2f}"]
               for name, lat in (("redlease (pub/sub wake-up)", ho["redlease"]),
                                 ("polling lock", ho["polling"]))]
    red, pol = statistics.median(ho["redlease"]), statistics.median(ho["polling"])
    share = rps[("redlease", 1)]["requests_per_s"] / rps[("empty", 1)]["requests_per_s"]
    out.update({
        "openresty_connections": first["connections"],
        "openresty_seconds": first["seconds"],
        "openresty_poll_ms": f"{d['poll_step_s'] * 1000:.0f}",
        "openresty_rps_table": table(["workers", "empty handler (limit), req/s", "redlease, req/s",
                                      "share of the limit", "polling lock, req/s"], rows),
        "openresty_rounds": len(ho["redlease"]),
        "openresty_handoff_table": table(["lock", "p50 ms", "p90 ms", "max ms"], ho_rows),
        "openresty_share": f"{share:.2f}",
        "openresty_share_verdict": "met" if share >= 0.5 else "not met",
        "openresty_handoff_x": f"{pol / red:.0f}",
        "openresty_handoff_verdict": "met" if pol >= 20 * red else "not met",
    })
    return out
