"""Writes the safety report (docs/safety.md) and its timelines (SVG, drawn here: no plotting
dependency) from run.py's results. Every number on the page is one the harness measured.
`python report.py build/safety/results.json --page P --img D` redraws it without running."""

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from typing import Dict, List

GOAL_ACQUISITIONS = 10_000
EXPLAIN = {
    "none": "no fault",
    "partition-one": "one client process cut from Redis (nftables drops its packets)",
    "partition-half": "half the client processes cut from Redis",
    "pause-holder": "a process holding a lock stopped (SIGSTOP) past its lease, then SIGCONT",
    "pause-redis": "redis-server stopped (SIGSTOP), then SIGCONT",
    "client-pause": "`CLIENT PAUSE ms ALL`",
    "debug-sleep": "`DEBUG SLEEP s`: the server answers nobody",
    "kill-primary": "the master killed (SIGKILL); the sentinels promote the replica; the node "
                    "comes back empty as a replica",
    "partition-primary": "the master cut from its replica and the sentinels (nftables) while "
                         "clients still reach it; the sentinels promote the replica",
    "busy-script": "a script that runs past `busy-reply-threshold` (100 ms): every other "
                   "client is answered `BUSY` until it ends",
    "reshard": "the slot of a held lock moved to another master while held and renewed "
               "(`CLUSTER SETSLOT` IMPORTING/MIGRATING, half the fault with the keys at the "
               "source, `MIGRATE ... KEYS`, half with the keys at the target, `SETSLOT NODE`)",
    "clock-jump": "the Redis host's clock jumped forward past the lease (libfaketime on "
                  "redis-server), and stays there",
    "latency": "clients reach Redis through a delaying relay; for the fault, round trips of "
               "0.7 to 1.2 renewal periods (a third of the lease), command timeout 1.5 s",
    "mixed": "every kind above, drawn one after another from the seed",
    "mixed-failover": "every kind above and a master killed, drawn one after another from "
                      "the seed",
    "broken-client:pause-holder": "not redlease: SET NX PX with no renewal and a blind DEL, "
                                  "its holders paused past the lease (the checker's proof)",
}


CLUSTER_EXPLAIN = {
    "kill-primary": "the master of a held lock's slot killed (SIGKILL); its replica takes over "
                    "after the 1 s node timeout; the node comes back empty as a replica",
    "partition-primary": "the master of a held lock's slot cut from every other node (nftables) "
                         "while clients still reach it; its replica takes over after the 1 s "
                         "node timeout",
}


def _explain(case: str) -> str:
    parts = case.split("/")
    kind = parts[1] if parts[0] in ("sentinel", "cluster") else parts[0]
    text = EXPLAIN.get(kind, kind)
    if parts[0] == "sentinel":
        text = "master, replica and three sentinels: " + text
    if parts[0] == "cluster":
        text = ("three masters with a replica each: " + CLUSTER_EXPLAIN.get(kind, text)
                + ("" if kind in ("kill-primary", "partition-primary", "mixed-failover") else
                   "; node timeout 10 s, past every pause: no failover"))
    if "sync_replicas" in parts:
        text += ", every lock write acknowledged by the replica (`sync_replicas=1`)"
    if "lease-30s" in parts:
        text += ", with the default 30 s lease and timeouts"
    return text


def _version(argv: List[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.strip().split("\n")[0]
    except OSError:
        return "?"


def _pct(ok_total) -> str:
    ok, total = ok_total
    return f"{100 * ok / total:.0f}% of {total}" if total else "-"


def _ms(values) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} / {max(values):.0f}"


def _fenced(r, mode: str, key: str) -> str:
    vals = [f[key] for f in r["fenced"].values() if f["mode"] == mode]
    return str(sum(vals)) if vals else "-"


def table(results: List[dict]) -> str:
    head = ("| nemesis | lease | seed | faults | acquisitions | overlaps | reported (in doubt; "
            "min margin) "
            "| unreported | outside the promise (holder paused past lease, clock jump) "
            "| fenced writes rejected | lost increments "
            "fenced / unfenced | acquires ok during / after faults | recovery ms (median / max) "
            "| stuck |\n|" + "---|" * 14 + "\n")
    rows = []
    for r in results:
        margin = (f" ({r.get('reported_in_doubt', 0)}; {min(r['margins_ms']):.0f} ms)"
                  if r["margins_ms"] else "")
        av = r["availability"]
        rows.append(
            f"| {r['case']} | {r['lease']:g} s | {r['seed']} | {len(r['faults'])} | "
            f"{r['acquisitions']} | {r['overlaps']} | {r['reported']}{margin} | "
            f"**{r['unreported']}** | {r['outside_promise']} | "
            f"{_fenced(r, 'fenced', 'rejected')} | {_fenced(r, 'fenced', 'lost_increments')} / "
            f"{_fenced(r, 'unfenced', 'lost_increments')} | {_pct(av['during'])} / "
            f"{_pct(av['after'])} | {_ms(av['recovery_ms'])} | "
            f"{', '.join(av['stuck']) or 'none'} |")
    return head + "\n".join(rows) + "\n"


def language_table(results: List[dict]) -> str:
    """Per case: each client language's acquisitions (of which on the locks every language
    held), losses told and fenced writes accepted, and the overlaps per pair of languages
    (earlier holder > later one): reported, unreported, outside the promise."""
    rows = []
    for r in results:
        per = r.get("languages")
        if not per:  # results from before the Lua clients
            continue
        langs = sorted(per)
        held = " / ".join(f"{per[k]['acquisitions']}" for k in langs)
        lost = " / ".join(f"{per[k]['lost']}" for k in langs)
        writes = " / ".join(f"{per[k]['accepted']}" for k in langs)
        pairs = "; ".join(f"{k}: {c['overlaps']} ({c['reported']} reported, "
                          f"**{c['unreported']}** unreported, {c['outside_promise']} outside)"
                          for k, c in r.get("overlaps_by_language", {}).items()) or "none"
        rows.append(f"| {r['case']} | {r['seed']} | {' / '.join(langs)} | {held} | {lost} | "
                    f"{writes} | {pairs} |")
    if not rows:
        return "Not measured in this run.\n"
    return ("| case | seed | languages | acquisitions | losses told | database writes accepted "
            "| overlaps by languages (earlier > later holder) |\n|" + "---|" * 7 + "\n"
            + "\n".join(rows) + "\n")


def _sum_fenced(rs: List[dict], fenced: bool, key: str = "lost_increments") -> int:
    return sum(f[key] for r in rs for f in r["fenced"].values()
               if (f["mode"] != "unfenced") == fenced)


def fails_over(r: dict) -> bool:
    """A case whose deployment replaces a master: every Sentinel case, a Cluster case that
    kills one (older results name no nemesis: by their case name)."""
    kinds = r.get("nemesis") or r["case"].split("/")
    return r["topology"] == "sentinel" or (
        r["topology"] == "cluster" and ("kill-primary" in kinds or "partition-primary" in kinds
                                        or "mixed-failover" in kinds))


def clock_jumps(r: dict) -> bool:
    return "clock-jump" in (r.get("nemesis") or [r["case"]])


def verdicts(results: List[dict]) -> str:
    product = [r for r in results if r["client"] == "redlease"]
    single = [r for r in product if not fails_over(r) and not clock_jumps(r)]
    failover = [r for r in product if fails_over(r)]
    jumps = [r for r in product if clock_jumps(r)]
    # per case (a nemesis alone, or mixed): a mixed case's overlaps are not any one kind's
    per_case: Dict[str, List[dict]] = {}
    for r in single:
        per_case.setdefault(r["case"], []).append(r)
    unreported = sum(r["unreported"] for r in single)
    lost_fenced = _sum_fenced(single, True)
    outside = sum(r["outside_promise"] for r in single)
    counts = {k: sum(r["acquisitions"] for r in rs) for k, rs in per_case.items()}
    short = {k: n for k, n in counts.items() if n < GOAL_ACQUISITIONS and k != "none"}
    met = unreported == 0 and lost_fenced == 0
    g1 = ("**met**" if met and not short else "**met so far**" if met else "**not met**")
    by_kind = sorted((k, sum(r["unreported"] for r in rs)) for k, rs in per_case.items())
    lines = [
        f"- **One Redis and a Cluster without failover, under partitions, client pauses, Redis "
        f"pauses, `BUSY` and reshards: 0 unreported overlaps and 0 lost fenced increments.** "
        f"{g1}: {unreported} unreported "
        f"overlaps ("
        + ", ".join(f"{n} under {k}" for k, n in by_kind if n) + (") " if unreported else "none) ")
        + f"and {lost_fenced} lost fenced increments; acquisitions: "
        + ", ".join(f"{n:,} under {k}" for k, n in sorted(counts.items()))
        + (f". Short of {GOAL_ACQUISITIONS:,} acquisitions for: {', '.join(sorted(short))}"
           if short else "")
        + f". Processes paused past their lease made {outside} overlaps not reported in time (a "
        f"stopped process can be told nothing), outside the promise's assumption. Fencing kept "
        f"every increment ({lost_fenced} lost) where the same work without fencing lost "
        f"{_sum_fenced(single, False)}."
        + ("" if any(r["topology"] == "cluster" for r in single) else
           " Not measured in this run: a Redis Cluster, reshards."),
    ]
    if failover:
        plain = [r for r in failover if not r["options"].get("sync_replicas")]
        synced = [r for r in failover if r["options"].get("sync_replicas")]

        def said(rs: List[dict]) -> str:
            return (f"{sum(r['overlaps'] for r in rs)} overlaps, "
                    f"{sum(r['reported'] for r in rs)} reported in time "
                    f"({sum(r.get('reported_in_doubt', 0) for r in rs)} of them in doubt), "
                    f"{sum(r['unreported'] for r in rs)} not, over "
                    f"{sum(r['acquisitions'] for r in rs):,} acquisitions and "
                    f"{sum(len(r['faults']) for r in rs)} faults")
        ok = sum(r["unreported"] for r in failover) == 0 and _sum_fenced(failover, True) == 0
        lines.append(
            "- **Failover with asynchronous replication (Sentinel, Cluster): every overlap "
            "reported, 0 lost fenced increments.** "
            + ("**met**" if ok else "**not met**") + f": without `sync_replicas`, {said(plain)}"
            + (f"; with `sync_replicas=1`, {said(synced)}" if synced else "")
            + "; of which in a Cluster, "
            + said([r for r in failover if r["topology"] == "cluster"])
            + f". Lost increments with fencing: {_sum_fenced(failover, True)}, without: "
            f"{_sum_fenced(failover, False)}. Fenced writes PostgreSQL refused: "
            f"{_sum_fenced(failover, True, 'rejected')} (a token below the greatest the row had "
            "seen: after a failover the promoted replica may lack the latest token, so tokens "
            "can go backwards; the store refuses them, nothing is lost, but those holders cannot "
            "write until tokens pass the old greatest).")
    else:
        lines.append("- **Failover with asynchronous replication (Sentinel, Cluster): every "
                     "overlap reported, 0 lost fenced increments.** Not measured in this run.")
    all_unreported = sum(r["unreported"] for r in product)
    lines += [
        "- **A clock jump on the Redis host: measured and explained.** " + jump_verdict(jumps),
        "- **Any unreported overlap is a defect.** "
        + ("None found in these runs." if all_unreported == 0 else
           f"{all_unreported} found: see \"Unreported overlaps\" below."),
    ]
    broken = [r for r in results if r["client"] == "broken"]
    if broken:
        b = broken[0]
        lines.append(f"- **The checker can fail.** The deliberately broken lock (SET NX PX, no "
                     f"renewal, no loss report) under the same pauses: {b['overlaps']} overlaps, "
                     f"{b['reported']} reported; the short form (`make test-safety`) fails "
                     f"unless the checker flags it.")
    return "\n".join(lines) + "\n"


def jump_verdict(rs: List[dict]) -> str:
    """What the clock jumps did: Redis expires keys by its wall clock, so a jump forward past the
    lease ends every lease at once; the holders learn it at their next renewal."""
    if not rs:
        return "Not measured in this run."
    told = [r["outside_told_ms"]["clock-jump"] for r in rs
            if "clock-jump" in r.get("outside_told_ms", {})]
    n = sum(t["overlaps"] for t in told)
    medians = [t["median"] for t in told if t["median"] is not None]
    worst = max((t["max"] for t in told if t["max"] is not None), default=None)
    return (f"**measured**: {sum(len(r['faults']) for r in rs)} jumps forward of 1.5 to 3 "
            f"leases over {sum(r['acquisitions'] for r in rs):,} acquisitions: "
            f"{sum(r['overlaps'] for r in rs)} overlaps, {sum(r['reported'] for r in rs)} "
            f"reported in time; in {n} the earlier hold, running at the jump, was ended by it "
            f"with no warning possible (Redis expires keys by its wall clock, which the jump "
            f"moved past their expiry: the key vanishes at once), and its holder learned it "
            + (f"{statistics.median(medians):.0f} ms (median; at most {worst:.0f} ms) after "
               f"another owner had entered, at its next renewal (every lease/3) or its release"
               if medians else "not before its release")
            + f". Fencing kept every increment ({_sum_fenced(rs, True)} lost, "
            f"{_sum_fenced(rs, True, 'rejected')} stale writes refused; without fencing "
            f"{_sum_fenced(rs, False)} lost). The promise assumes clocks that do not jump on "
            f"the Redis host; this is what breaking that assumption costs.")


def unreported_section(results: List[dict]) -> str:
    """Each unreported overlap of redlease (up to three per case): the two holds, in ms from
    the case's start, and when the earlier holder was told."""
    out = []
    for r in results:
        if r["client"] != "redlease" or not r["unreported"]:
            continue
        out.append(f"- `{r['case']}`, seed {r['seed']}: {r['unreported']} unreported.")
        for d in r["unreported_detail"][:3]:
            e, la = d["earlier"], d["later"]

            def ms(t: int, start: int = r["start"]) -> str:
                return f"{(t - start) / 1e6:.1f}"
            told = (f"told ({e['told_by']}) at {ms(e['told'])}, "
                    f"{d['told_after_later_began_ms']:.1f} ms after the later holder began"
                    if e["told"] else "never told")
            out.append(f"  - `{d['lock']}`: {e['proc']}/{e['owner']} held from {ms(e['start'])} "
                       f"to {ms(e['end'])} ms (token {e['token']}); {la['proc']}/{la['owner']} "
                       f"from {ms(la['start'])} to {ms(la['end'])} ms (token {la['token']}); "
                       f"the earlier holder was {told}.")
    if not out:
        return "None.\n"
    return ("Each is a defect of redlease or, under a failover without `sync_replicas`, of "
            "asynchronous replication; the diagnosis of each is in `tests/safety/README.md` "
            "(\"Defects found\").\n\n" + "\n".join(out) + "\n")


def svg(r: dict) -> str:
    t = r["timeline"]
    lo, hi = t["window"]
    owners = sorted({h[0] for h in t["holds"]}, key=lambda o: (o.split("/")[0], o))
    locks = sorted({h[1] for h in t["holds"]})
    colours = ["#4878cf", "#6acc65", "#956cb4", "#d5bb67", "#82c6e2", "#8c613c"]
    colour = {lock: colours[i % len(colours)] for i, lock in enumerate(locks)}
    left, width, row, top = 70, 820, 12, 34
    height = top + row * len(owners) + 40
    x = lambda ms: left + (ms - lo) / max(1.0, hi - lo) * width  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 10}" '
           f'height="{height}" font-family="sans-serif" font-size="10">',
           '<rect width="100%" height="100%" fill="white"/>']
    for kind, s, e, target in t["faults"]:
        out.append(f'<rect x="{x(s):.1f}" y="{top - 14}" width="{max(1, x(e) - x(s)):.1f}" '
                   f'height="{row * len(owners) + 14}" fill="#f4c7c3" opacity="0.6"/>')
        out.append(f'<text x="{x(s) + 2:.1f}" y="{top - 4}">{kind} {"/".join(target)}</text>')
    for i, o in enumerate(owners):
        out.append(f'<text x="2" y="{top + row * i + 9}">{o}</text>')
    index = {o: i for i, o in enumerate(owners)}
    for owner, lock, s, e, told in t["holds"]:
        y = top + row * index[owner]
        out.append(f'<rect x="{x(s):.1f}" y="{y + 1}" width="{max(0.8, x(e) - x(s)):.1f}" '
                   f'height="{row - 2}" fill="{colour[lock]}"/>')
        if told is not None and lo <= told <= hi:
            out.append(f'<rect x="{x(told) - 1:.1f}" y="{y}" width="2" height="{row}" '
                       f'fill="black"/>')
    marks = {"reported": "#1f77b4", "unreported": "#d62728"}
    for _lock, s, e, kind in t["overlaps"]:
        out.append(f'<rect x="{x(s):.1f}" y="{top + row * len(owners) + 2}" '
                   f'width="{max(1.5, x(e) - x(s)):.1f}" height="8" '
                   f'fill="{marks.get(kind, "#ff7f0e")}"/>')
    base = top + row * len(owners) + 24
    legend = "  ".join(f"■ {lock}" for lock in locks)
    out.append(f'<text x="{left}" y="{base}">{legend}; black tick: holder told of a loss; '
               f'strip below the bars: overlaps (red unreported, orange outside the promise: a '
               f'holder paused past its lease or a clock jump, blue reported); shaded: fault. '
               f'{lo / 1000:.1f} s to {hi / 1000:.1f} s after the start.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(results: List[dict], page: str, img: str, command: str = "make safety") -> None:
    os.makedirs(img, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(page)), exist_ok=True)
    rel = os.path.relpath(img, os.path.dirname(os.path.abspath(page)))
    seeds = sorted({r["seed"] for r in results})
    pictures = []
    for r in results:
        case = r["case"].replace("/", "_").replace(":", "_")
        name = f"safety-{r['topology']}-{case}-{r['seed']}.svg"
        with open(os.path.join(img, name), "w") as f:
            f.write(svg(r))
        explain = _explain(r["case"])
        pictures.append(f"### {r['case']} (seed {r['seed']})\n\n{explain}.\n\n"
                        f"![timeline of {r['case']}]({rel}/{name})\n")
    by_topology: Dict[str, List[dict]] = {}
    for r in results:
        by_topology.setdefault(r["topology"], []).append(r)
    procs = " or ".join(str(n) for n in sorted({r["procs"] for r in results}))
    owners = " or ".join(str(n) for n in sorted({r["owners"] // max(1, r["procs"])
                                                 for r in results}))
    lease_note = ", ".join(sorted({f"{r['lease']:g} s" for r in results}))
    langs = ", ".join(sorted({k for r in results for k in r.get("languages", {"python": 0})}))
    text = f"""# Safety under real faults

Written by the safety harness (`tests/safety/README.md`), here by `{command}`: do not edit by
hand. Every number below was measured by that run: {time.strftime('%Y-%m-%d')}, seeds {seeds}
(a run is reproduced by its seeds: `python tests/safety/run.py ... --seed N`), on
{os.cpu_count()} cores, Linux {platform.release()}, {_version(['redis-server', '--version'])},
{_version(['psql', '--version'])}. Leases (watchdog timeouts): {lease_note}.

## What redlease promises, and under which assumptions

While an owner believes it holds a lock, nobody else holds it, or the owner is told first: a
hold that may be gone is reported (in doubt: `lock.in_doubt`, `on_state(name, "in_doubt", why)`;
lost: `lock.lost`, `on_lost(name, reason)`, `LockLostError` at the release) no later than the
moment another owner can be granted the lock. A hold in doubt may still be valid: a careful
holder stops acting on it (`lock.check()` before a critical write) until it is confirmed
(`on_state(name, "held", ...)`) or lost. This rests on:

- **Pauses shorter than the lease minus a margin.** A process stopped past its lease (GC, swap,
  a stopped VM) cannot be told anything while stopped: another owner takes the lock when the
  lease ends, and the stopped one resumes believing it holds it. Fencing tokens are the answer:
  a store that keeps the greatest token it has seen refuses the stale holder's writes.
- **A fencing store that registers the token at the read of a read-modify-write**, not only at
  the write: if only the write is checked, a stale holder's write that lands before the new
  holder's still loses the new holder's increment (the new holder read before it).
- **Clocks that do not jump on the Redis host.** Redis expires keys by its wall clock (measured
  here: with libfaketime moving only the wall clock, a key whose expiry the jump passes is gone
  at once): a jump forward past the lease ends every lease at once, before any holder can be
  told; the holders learn it at their next renewal.
- **Replication is asynchronous** unless `sync_replicas` is set: a failover can lose a lock
  that was granted (the Sentinel and Cluster failover cases).

## Verdicts

{verdicts(results)}
## Results

An overlap is a pair of holds of one lock by two owners that intersect in time; a hold runs from
the end of its acquire call to the start of its release. Reported: the earlier holder was told
before the later one's acquire returned (the margin is by how much): its hold lost, or in doubt
and not confirmed since ("in doubt" counts those). Each case runs {procs}
client processes in {langs} (Python: `tests/safety/worker.py`; Lua: `worker.lua` on the Lua
rock under lua5.4; OpenResty, with one Redis: an nginx of its own on the rock's OpenResty
backend, mutex owners only) with {owners} owners (threads in Python, coroutines in Lua,
requests in nginx) each, every process on the same lock names, so holders of every language
exclude each other;
"recovery" is the time from a fault's end until every lock was acquired again; "stuck" names a
lock not acquired within one lease (plus 3 s) of the last fault's end.

"""
    for topology, rs in by_topology.items():
        text += f"### Topology: {topology}\n\n" + table(rs) + "\n"
    text += ("## By client language\n\nEach language's counts (in the order of the languages "
             "column), and the overlaps per pair of languages of the two holders.\n\n"
             + language_table(results) + "\n")
    text += "## Unreported overlaps\n\n" + unreported_section(results) + "\n"
    text += ("## Timelines\n\nHolds as bars per owner (process/thread, coroutine or "
             "request), one colour per lock.\n\n")
    text += "\n".join(pictures)
    with open(page, "w") as f:
        f.write(text)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--page", required=True)
    ap.add_argument("--img", required=True)
    ap.add_argument("--command", default="make safety", help="what ran it, for the page")
    args = ap.parse_args()
    with open(args.results) as f:
        write(json.load(f), args.page, args.img, args.command)


if __name__ == "__main__":
    main()
