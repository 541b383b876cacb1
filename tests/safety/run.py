"""Runs safety cases and checks them: `python run.py --short|--full [--seed N ...]`.

Each case starts its own redis-server and PostgreSQL, client processes (worker.py), and the
nemesis on the case's schedule (from the seed, printed first); then checks the histories
(checker.py) and writes results.json beside them. `--page` writes the report (report.py).
"""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, replace
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases as casebook  # noqa: E402
import checker  # noqa: E402
import history  # noqa: E402
import net  # noqa: E402
import procs  # noqa: E402
import resty  # noqa: E402
import servers  # noqa: E402
from nemesis import Nemesis, schedule  # noqa: E402

now = time.monotonic_ns
S = 1_000_000_000


def cleanup_on_signals(cleanup) -> None:
    """SIGTERM, SIGINT and SIGHUP end the run through its cleanup; SIGKILL is left to the
    parent-death signal of every child and to the next run's sweep."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, handler)


def sweep() -> List[str]:
    return net.sweep() + procs.sweep()


def setup_db(dsn: str, rows: List[str]) -> None:
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("CREATE TABLE counters (id text PRIMARY KEY, value bigint NOT NULL, "
                   "fence bigint NOT NULL)")
        db.execute("CREATE TABLE accepted (n bigserial PRIMARY KEY, row_id text NOT NULL, "
                   "token bigint, value bigint NOT NULL)")
        for r in rows:
            db.execute("INSERT INTO counters VALUES (%s, 0, 0)", (r,))


def read_db(dsn: str) -> Dict[str, checker.Fenced]:
    import psycopg
    out: Dict[str, checker.Fenced] = {}
    with psycopg.connect(dsn, autocommit=True) as db:
        for row, value in db.execute("SELECT id, value FROM counters ORDER BY id").fetchall():
            acc = db.execute("SELECT token, value FROM accepted WHERE row_id = %s ORDER BY n",
                             (row,)).fetchall()
            out[row] = checker.Fenced(row.split(":")[0], value, [tuple(a) for a in acc])
    return out


def run_case(case: casebook.Case, seed: int, out: str) -> dict:
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    plan = schedule(seed, case.name, list(case.nemesis), case.duration, case.lease)
    run = procs.Run()
    parts = net.Partitions()
    workers: Dict[str, subprocess.Popen] = {}
    nodes: List[resty.Node] = []  # OpenResty clients: nginx, driven by the run's requests
    try:
        names = [f"p{k}" for k in range(case.procs)]
        gids = {p: net.client_gid(k) for k, p in enumerate(names)}
        if case.topology == "sentinel":
            topology = servers.Sentinels(run, [net.node_address(i) for i in (0, 2, 3, 4, 5)])
        elif case.topology == "cluster":
            topology = servers.Cluster(run, [net.node_address(i) for i in (0, 2, 3, 4, 5, 6)],
                                       case.node_timeout_ms)
        else:
            relay = net.node_address(7) if "latency" in case.nemesis else None
            topology = servers.OneRedis(run, net.node_address(0),
                                        clock="clock-jump" in case.nemesis, relay=relay)
        db_rows = sorted({lock for wl, lock in case.owners if wl != "mutex"})
        pg = servers.Postgres(run, net.node_address(1)) if db_rows else None
        if pg:
            setup_db(pg.dsn, db_rows)
        start_at = now() + 3 * S
        stop_at = start_at + int(case.duration * S)
        for k, p in enumerate(names):
            cfg = {"proc": p, "url": topology.url, "owners": case.owners,
                   "client": case.client, "options": case.options, "lease": case.lease,
                   "seed": seed, "start_at": start_at, "stop_at": stop_at,
                   "acquire_timeout": case.acquire_timeout, "hold_ms": case.hold_ms,
                   "think_ms": case.think_ms, "pg": pg.dsn if pg else None,
                   "out": os.path.join(out, f"{p}.jsonl")}
            parts.label(gids[p])
            if case.lang(k) == "openresty":
                # an nginx on an address of its own: one Redis uses addresses 0, 1 and 7
                assert case.topology == "one-redis" and len(nodes) < 5, case.name
                node = resty.Node(run, p, cfg, gids[p], net.node_address(2 + len(nodes)), out,
                                  to_lua)
                nodes.append(node)
                workers[p] = node.process
            else:
                workers[p] = spawn_worker(run, case.lang(k), p, cfg, gids[p], out)
        for node in nodes:
            node.drive()

        def client_ids() -> Dict[str, str]:
            ids = {}
            for p in names:
                for e in history.read([os.path.join(out, f"{p}.jsonl")]):
                    if e["kind"] == "hello":
                        ids[p] = e["client_id"]
                        break
            return ids

        locks = sorted({lock for _, lock in case.owners})
        nem = Nemesis(parts, topology, {p: w.pid for p, w in workers.items()}, gids, client_ids,
                      locks, case.lease)
        faults = history.Writer(os.path.join(out, "faults.jsonl"))
        rng = random.Random(f"{seed}:{case.name}:targets")
        for offset, kind, d in plan:
            _sleep_until(start_at + int(offset * S))
            if now() + int((d + case.lease + 3) * S) > stop_at:
                # the deployment took long to settle after the last fault: no time for this one
                # and for the check of stuck locks after it
                print(f"safety: {case.name}: no time left for {kind} at {offset} s", flush=True)
                break
            t0 = now()
            target, heal = nem.start(kind, d, rng)
            _sleep_until(t0 + int(d * S))
            heal()
            t1 = now()
            settled = topology.settle(30)  # a failover done, a restarted node in sync
            faults("fault", fault=kind, target=target, start=t0, end=t1, planned=d,
                   settled=now() if settled else None)
        faults.close()
        limit = stop_at + int((case.acquire_timeout + 15) * S)
        for node in nodes:
            node.finish(limit / S)
        for w in workers.values():
            try:
                w.wait(timeout=max(1.0, (limit - now()) / S))
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        run_end = now()
        fenced = read_db(pg.dsn) if pg else {}
    finally:
        parts.close()
        run.close()
    events = history.read(os.path.join(out, f) for f in sorted(os.listdir(out))
                          if f.endswith(".jsonl"))
    result = check(case, seed, plan, events, fenced, start_at, run_end)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    return result


# The rock built for lua5.4 by `make lua-rocks` (mk/lua.mk), which worker.lua loads.
LUA_TREE = os.path.join(HERE, "..", "..", "build", "lua-lua5.4")


def spawn_worker(run, lang: str, p: str, cfg: dict, gid: int, out: str) -> subprocess.Popen:
    """Client process p in its language: worker.py reads its configuration as JSON, worker.lua
    as a Lua chunk that returns it."""
    stderr = open(os.path.join(out, f"{p}.stderr"), "w")
    if lang == "python":
        path = os.path.join(run.dir, f"{p}.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        return run.spawn([sys.executable, os.path.join(HERE, "worker.py"), path], gid=gid,
                         stderr=stderr)
    if lang == "lua":
        path = os.path.join(run.dir, f"{p}.lua")
        with open(path, "w") as f:
            f.write("return " + to_lua(cfg) + "\n")
        tree = os.path.abspath(LUA_TREE)
        env = {**os.environ,
               "LUA_PATH": f"{tree}/share/lua/5.4/?.lua;{tree}/share/lua/5.4/?/init.lua;;",
               "LUA_CPATH": f"{tree}/lib/lua/5.4/?.so;;"}
        return run.spawn(["lua5.4", os.path.join(HERE, "worker.lua"), path], gid=gid,
                         stderr=stderr, env=env)
    raise ValueError(f"no client process in {lang!r}")


def to_lua(v) -> str:
    """A Lua literal of JSON-like data (None is nil: its key is left out)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string of printable ASCII is a Lua string literal
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(to_lua(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"[{to_lua(k)}] = {to_lua(x)}" for k, x in v.items()
                               if x is not None) + "}"
    raise TypeError(v)


def _sleep_until(t: int) -> None:
    while now() < t:
        time.sleep(min(0.05, (t - now()) / S))


def check(case, seed, plan, events, fenced, start_at, run_end) -> dict:
    faults = list(history.of(events, "fault"))
    hs = checker.holds(events, run_end)
    ovs = checker.overlaps(hs, faults)
    for f in fenced.values():
        checker.check_fenced(f)
    lease_ns = int(case.lease * S)
    av = checker.availability(events, faults, run_end, lease_ns, 3 * S)
    acquires = list(history.of(events, "acquire"))
    return {
        "case": case.name, "seed": seed, "topology": case.topology, "client": case.client,
        "nemesis": list(case.nemesis),
        "lease": case.lease, "options": case.options, "procs": case.procs,
        "owners": len(case.owners) * case.procs, "plan": plan, "start": start_at, "end": run_end,
        "attempts": len(acquires), "acquisitions": sum(e["ok"] for e in acquires),
        "errors": _count(e.get("error") for e in acquires if e.get("error")),
        "lost_reports": _count(e["reason"] for e in history.of(events, "lost")),
        "doubt_reports": sum(1 for e in history.of(events, "state") if e["state"] == "in_doubt"),
        **_overlap_results(events, hs, ovs, faults, start_at, run_end),
        "fenced": {r: {"mode": f.mode, "accepted": len(f.accepted), "final": f.final,
                       "rejected": _rejected(events, r), "lost_increments": f.lost_increments,
                       "token_order_errors": f.token_order_errors[:10]}
                   for r, f in fenced.items()},
        "availability": {"during": [av.during_ok, av.during], "after": [av.after_ok, av.after],
                         "recovery_ms": [round(r / 1e6) for r in av.recoveries_ns],
                         "healed_to_usable_ms": {k: round(v / 1e6)
                                                 for k, v in av.healed_to_usable_ns.items()},
                         "stuck": av.stuck},
        "faults": faults,
    }


def recheck(case_dir: str) -> dict:
    """The overlaps of a finished case checked again from its histories (after a change of the
    checker); the database's numbers, measured once, are kept."""
    with open(os.path.join(case_dir, "results.json")) as f:
        r = json.load(f)
    events = history.read(os.path.join(case_dir, f) for f in sorted(os.listdir(case_dir))
                          if f.endswith(".jsonl"))
    faults = list(history.of(events, "fault"))
    hs = checker.holds(events, r["end"])
    ovs = checker.overlaps(hs, faults)
    r.update(_overlap_results(events, hs, ovs, faults, r["start"], r["end"]))
    with open(os.path.join(case_dir, "results.json"), "w") as f:
        json.dump(r, f, indent=1)
    return r


def _overlap_results(events, hs, ovs, faults, start_at, run_end) -> dict:
    """What the checker says of the overlaps (a run's, or a finished run's checked again)."""
    unreported = [o for o in ovs if not o.reported and not o.outside_promise]
    per_lang, lang_pairs = checker.by_language(events, ovs)
    return {
        "languages": per_lang, "overlaps_by_language": lang_pairs,
        "overlaps": len(ovs), "reported": sum(o.reported for o in ovs),
        # of those reported, the ones whose holder was told in doubt (not yet lost) in time
        "reported_in_doubt": sum(1 for o in ovs if o.reported and o.told_by == "state:in_doubt"),
        "unreported": len(unreported),
        "outside_promise": sum(1 for o in ovs if not o.reported and o.outside_promise),
        "margins_ms": sorted(o.margin_ns / 1e6 for o in ovs if o.reported),
        "unreported_detail": [_overlap_json(o) for o in unreported[:20]],
        "outside_told_ms": _outside_told_ms(ovs),
        "timeline": _timeline(hs, ovs, faults, start_at, run_end),
    }


def _outside_told_ms(ovs) -> Dict[str, dict]:
    """Per fault that broke an assumption: how long after the later holder entered the earlier
    one was told (median and max in ms over the overlaps; `never`: not before its release)."""
    lags: Dict[str, List[float]] = {}
    never: Dict[str, int] = {}
    for o in ovs:
        if o.outside_promise and not o.reported:
            lags.setdefault(o.outside_promise, [])
            if o.earlier.told:
                lags[o.outside_promise].append((o.earlier.told - o.later.start) / 1e6)
            else:
                never[o.outside_promise] = never.get(o.outside_promise, 0) + 1
    return {k: {"overlaps": len(v) + never.get(k, 0), "never": never.get(k, 0),
                "median": round(statistics.median(v), 1) if v else None,
                "max": round(max(v), 1) if v else None} for k, v in lags.items()}


def _rejected(events, row) -> int:
    return sum(1 for e in history.of(events, "write") if e["row"] == row and not e["accepted"])


def _count(values) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def _overlap_json(o: checker.Overlap) -> dict:
    return {"lock": o.lock, "earlier": asdict(o.earlier), "later": asdict(o.later),
            "told_after_later_began_ms": (o.earlier.told - o.later.start) / 1e6
            if o.earlier.told else None}


def _timeline(hs, ovs, faults, start_at, run_end, width_s: float = 12.0) -> dict:
    """The holds, faults and overlaps of one window of the run, in ms from its start: around the
    first overlap, else the first fault, else the start."""
    if ovs:
        centre = ovs[0].later.start
    elif faults:
        centre = (faults[0]["start"] + faults[0]["end"]) // 2
    else:
        centre = start_at + int(width_s / 2 * S)
    # the longest fault and 4 s around it, at most 20 s: a page-sized picture
    span = min(20 * S, max(width_s * S, (max((f["end"] - f["start"] for f in faults),
                                             default=0) + 4 * S)))
    lo = max(start_at, int(centre - span / 2))
    hi = min(run_end, int(lo + span))
    ms = lambda t: round((t - start_at) / 1e6, 1)  # noqa: E731
    return {
        "window": [ms(lo), ms(hi)],
        "holds": [[f"{h.proc}/{h.owner}", h.lock, ms(max(h.start, lo)), ms(min(h.end, hi)),
                   ms(h.told) if h.told else None]
                  for h in hs if h.end > lo and h.start < hi],
        "faults": [[f["fault"], ms(f["start"]), ms(f["end"]), f["target"]] for f in faults
                   if f["end"] > lo and f["start"] < hi],
        "overlaps": [[o.lock, ms(o.later.start), ms(min(o.earlier.end, o.later.end)),
                      "reported" if o.reported else (o.outside_promise or "unreported")]
                     for o in ovs if o.later.start < hi and o.earlier.end > lo],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true", help="the short form (make test-safety)")
    ap.add_argument("--full", action="store_true", help="the full schedule (make safety)")
    ap.add_argument("--case", action="append", help="only these cases (by name)")
    ap.add_argument("--seed", type=int, action="append", help="seeds (default: one, random)")
    ap.add_argument("--out", default="build/safety")
    ap.add_argument("--duration", type=float, help="every case this many seconds (a trial)")
    ap.add_argument("--langs", help="client processes' languages in turn, e.g. "
                    "python,lua,openresty (default: each case's)")
    ap.add_argument("--procs", type=int, help="every case this many client processes")
    ap.add_argument("--page", help="write the report (docs/safety.md) here")
    ap.add_argument("--img", default="docs/img", help="the report's pictures")
    ap.add_argument("--recheck", action="store_true",
                    help="check the cases of --out again from their histories, run nothing")
    args = ap.parse_args()
    if args.recheck:
        with open(os.path.join(args.out, "results.json")) as f:
            old = json.load(f)
        results = [recheck(os.path.join(args.out, str(r["seed"]), r["case"].replace("/", "_")))
                   for r in old]
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f)
        if args.page:
            import report
            report.write(results, args.page, args.img, "make safety")
        return 0
    cleanup_on_signals(None)
    removed = sweep()
    if removed:
        print("safety: removed what dead runs left: " + ", ".join(removed), flush=True)
    book = casebook.full() if args.full else (casebook.short() + casebook.sentinel()
                                              + casebook.cluster() + [casebook.clock_jump(),
                                                                     casebook.latency(),
                                                                     casebook.broken()])
    if args.case:
        book = [c for c in book if c.name in args.case]
    if args.duration:
        book = [replace(c, duration=args.duration) for c in book]
    if args.langs:
        book = [replace(c, langs=tuple(args.langs.split(","))) if c.client == "redlease" else c
                for c in book]
    if args.procs:
        book = [replace(c, procs=args.procs) for c in book]
    seeds = args.seed or [random.SystemRandom().randrange(1, 1 << 31)]
    print(f"safety: seeds {seeds}", flush=True)
    results = []
    for seed in seeds:
        for case in book:
            t = time.monotonic()
            r = run_case(case, seed, os.path.join(args.out, str(seed), case.name.replace("/", "_")))
            results.append(r)
            print(f"safety: seed {seed} {case.name}: {r['acquisitions']} acquisitions, "
                  f"{r['overlaps']} overlaps ({r['reported']} reported, {r['unreported']} "
                  f"unreported, {r['outside_promise']} outside the promise), lost increments "
                  + ", ".join(f"{f['mode']} {f['lost_increments']}" for f in r["fenced"].values())
                  + f", stuck {r['availability']['stuck']} [{time.monotonic() - t:.0f} s]",
                  flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f)
    if args.page:
        import report
        report.write(results, args.page, args.img,
                     "make safety" if args.full else "tests/safety/run.py --short")
    return 0


if __name__ == "__main__":
    sys.exit(main())
