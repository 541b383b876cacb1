"""The instruction-count guard: the C core's operations run under callgrind
(bench/c/callgrind_ops.c), which counts the instructions the process executes, the same count
run after run however loaded the machine is. Each operation's instructions per operation must
stay within the budget kept in bench/callgrind_budget.json (the count measured when the budget
was set, plus its margin).

    python bench/callgrind.py check [--results F]    the suite (make test-callgrind)
    python bench/callgrind.py budget [--runs 5]       rewrites the budget (make callgrind-budget)
    python bench/callgrind.py measure URL [--smoke]   one JSON object, for the benchmark page

`check` also proves that the guard bites: a cycle loop made 10% dearer (it runs 10% more cycles
than it reports) must fail its budget. Redis runs as its own process (not under valgrind), on a
free loopback port (redlease.testing.RedisServer), flushed between runs.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUDGET = os.path.join(HERE, "callgrind_budget.json")
OPS_BIN = os.path.join(ROOT, "build", "callgrind_ops")

# What each operation runs (callgrind_ops MODE ARGS) and what one operation is.
OPS = {
    "cycle-fixed": (["cycle-fixed", "2000"], "acquire + release, one thread, 10 s lease"),
    "cycle-watchdog": (["cycle-watchdog", "2000"], "acquire + release, one thread, watchdog"),
    "watchdog": (["watchdog", "10000", "1"], "one hold renewed in a round over 10,000 holds"),
    "handoff": (["handoff", "50"], "a hand-off between two clients of one process: the "
                "holder's acquire and release; the waiter's try, subscribe, wake-up by the "
                "release's message, acquire, release and unsubscribe"),
}
# The page's smoke run (make bench-smoke): the same operations, fewer of them.
SMOKE_ARGS = {"cycle-fixed": ["cycle-fixed", "200"], "cycle-watchdog": ["cycle-watchdog", "200"],
              "watchdog": ["watchdog", "1000", "1"], "handoff": ["handoff", "5"]}
# The regression the guard must catch: the cycle loop made this much dearer.
BITE = 0.10
NOT_COUNTABLE = 3  # callgrind_ops's exit status for a window that must be measured again
VALGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=no"]


def flush(url):
    port = url.rsplit(":", 1)[1].split("/")[0]
    subprocess.run(["redis-cli", "-p", port, "FLUSHALL"], capture_output=True, timeout=30,
                   check=True)


def instructions(out_file):
    """The instructions (Ir) a callgrind output file counts, over every thread."""
    with open(out_file) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise ValueError(f"{out_file}: no totals line")


def run_op(url, args, workdir, tries=3):
    """Runs callgrind_ops under callgrind; returns (instructions per op, ops, seconds). A window
    the program found not countable (exit NOT_COUNTABLE: a renewal round timed out on a loaded
    machine) is measured again."""
    os.makedirs(workdir, exist_ok=True)
    out = os.path.join(workdir, "callgrind.out")
    log = os.path.join(workdir, "valgrind.log")
    start = time.monotonic()
    for _ in range(tries):
        flush(url)
        proc = subprocess.run(VALGRIND + [f"--callgrind-out-file={out}", f"--log-file={log}",
                                          OPS_BIN, url, *args],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != NOT_COUNTABLE:
            break
        print(f"callgrind: {' '.join(args)}: not countable, again: {proc.stderr.strip()}",
              file=sys.stderr, flush=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind_ops {' '.join(args)}: exit {proc.returncode}: "
                           f"{proc.stderr[-400:]}")
    ops = json.loads(proc.stdout.strip().splitlines()[-1])["ops"]
    return instructions(out) / ops, ops, seconds


def margin_of(budget, name):
    """The op's own margin (the hand-off's: its waits take more paths on a loaded machine), or
    the file's."""
    return budget["ops"][name].get("margin", budget["margin"])


def limit(budget, name):
    return budget["ops"][name]["instructions_per_op"] * (1 + margin_of(budget, name))


def verdict(name, per_op, budget):
    """(ok, line) for one measured count against the budget file's entry."""
    entry = budget["ops"][name]
    top = limit(budget, name)
    change = per_op / entry["instructions_per_op"] - 1
    line = (f"{name}: {per_op:,.0f} instructions per op ({change:+.1%} on the budget's "
            f"{entry['instructions_per_op']:,.0f}; limit {top:,.0f})")
    return per_op <= top, line


def measure_all(url, workdir, runs=1, log=print, smoke=False):
    """{name: [instructions per op, one per run]} and the seconds each op took in all."""
    counts, seconds = {}, {}
    for name, (args, _) in OPS.items():
        args = SMOKE_ARGS[name] if smoke else args
        counts[name], seconds[name] = [], 0.0
        for i in range(runs):
            per_op, _, s = run_op(url, args, os.path.join(workdir, f"{name}-{i}"))
            counts[name].append(per_op)
            seconds[name] += s
            log(f"callgrind: {name} run {i + 1}: {per_op:,.1f} instructions per op ({s:.1f} s)")
    return counts, seconds


def check(url, workdir, results, budget_path=BUDGET):
    with open(budget_path) as f:
        budget = json.load(f)
    lines, passed, failed = [], 0, 0

    def count(ok, line):
        nonlocal passed, failed
        passed, failed = passed + ok, failed + (not ok)
        lines.append(("ok   " if ok else "FAIL ") + line)
        print(lines[-1], flush=True)

    measured = {}
    for name, (args, _) in OPS.items():
        try:
            per_op, _, s = run_op(url, args, os.path.join(workdir, name))
        except Exception as e:  # counted: the guard did not measure
            count(False, f"{name}: {e}")
            continue
        measured[name] = per_op
        ok, line = verdict(name, per_op, budget)
        count(ok, line + f" [{s:.1f} s]")
    # The guard bites: the same cycle loop, 10% dearer per reported cycle, must fail.
    args = OPS["cycle-fixed"][0]
    extra = str(round(int(args[1]) * BITE))
    try:
        per_op, _, _ = run_op(url, args + [extra], os.path.join(workdir, "bite"))
        ok, line = verdict("cycle-fixed", per_op, budget)
        count(not ok, f"bites: a cycle {BITE:.0%} dearer fails the budget ({line})")
    except Exception as e:
        count(False, f"bites: {e}")
    # and a budget set just under each measured count fails it
    for name, per_op in measured.items():
        m = margin_of(budget, name)
        lowered = {"margin": m, "ops": {name: {"instructions_per_op": per_op / (1 + m) - 1}}}
        ok, _ = verdict(name, per_op, lowered)
        count(not ok, f"bites: {name} fails a budget just under its count")
    lines.append(f"{passed} passed, {failed} failed")
    print(lines[-1])
    if results:
        os.makedirs(os.path.dirname(os.path.abspath(results)), exist_ok=True)
        with open(results, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failed else 0


def write_budget(url, workdir, runs, margin, why, budget_path=BUDGET):
    """Measures every op `runs` times and writes the budget: the median count of the runs, the
    margin, and every run's count (the spread the margin must cover). An op's own margin in the
    file before is kept."""
    kept = {}
    if os.path.exists(budget_path):
        with open(budget_path) as f:
            kept = {n: e["margin"] for n, e in json.load(f)["ops"].items() if "margin" in e}
    counts, _ = measure_all(url, workdir, runs)
    load = os.getloadavg()[0]
    budget = {
        "about": "instructions per operation of the C core under callgrind (bench/callgrind.py); "
                 "`make callgrind-budget` rewrites this file, and the commit says why",
        "margin": margin,
        "why": why,
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg": round(load, 2),
        "ops": {},
    }
    for name, runs_ in counts.items():
        budget["ops"][name] = {
            "what": OPS[name][1], "args": OPS[name][0],
            "instructions_per_op": round(statistics.median(runs_), 1),
            "runs": [round(x, 1) for x in runs_],
            "spread": round((max(runs_) - min(runs_)) / min(runs_), 5),
        }
        if name in kept:
            budget["ops"][name]["margin"] = kept[name]
    with open(budget_path, "w") as f:
        json.dump(budget, f, indent=1)
        f.write("\n")
    for name, e in budget["ops"].items():
        print(f"callgrind: {name}: {e['instructions_per_op']:,.1f} per op, spread "
              f"{e['spread']:.2%} over {runs} runs")
    print(f"callgrind: wrote {os.path.relpath(budget_path, ROOT)}")
    return 0


def measure_json(url, workdir, budget_path=BUDGET, smoke=False):
    """The benchmark page's rows: each op's count now, beside the budget's."""
    with open(budget_path) as f:
        budget = json.load(f)
    counts, seconds = measure_all(url, workdir, log=lambda line: print(line, file=sys.stderr),
                                  smoke=smoke)
    rows = []
    for name, per_op in counts.items():
        ok, _ = verdict(name, per_op[0], budget)
        args = SMOKE_ARGS[name] if smoke else OPS[name][0]
        rows.append({"impl": name, "what": OPS[name][1], "args": args,
                     "instructions_per_op": per_op[0],
                     "budget": budget["ops"][name]["instructions_per_op"],
                     "margin": margin_of(budget, name), "limit": limit(budget, name),
                     "within": ok,
                     "seconds": round(seconds[name], 2)})
    print(json.dumps({"measure": "callgrind", "margin": budget["margin"], "smoke": smoke,
                      "rows": rows}))
    return 0


def with_server(fn, url=None):
    if url:
        return fn(url)
    from redlease.testing import RedisServer
    with RedisServer() as server:
        return fn(server.url)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("action", choices=["check", "budget", "measure"])
    ap.add_argument("url", nargs="?", help="a Redis to use (default: a throwaway redis-server)")
    ap.add_argument("--results", help="check: where the 'N passed, N failed' transcript goes")
    ap.add_argument("--runs", type=int, default=5, help="budget: runs of each op")
    ap.add_argument("--margin", type=float, help="budget: the margin (default: the file's)")
    ap.add_argument("--why", default="", help="budget: why it changes (also say it in the commit)")
    ap.add_argument("--smoke", action="store_true", help="measure: fewer operations (bench-smoke)")
    ap.add_argument("--budget", default=BUDGET, help="the budget file (default: %(default)s)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "callgrind"),
                    help="callgrind's output files go here")
    a = ap.parse_args()
    if a.action == "check":
        return with_server(lambda url: check(url, a.work, a.results, a.budget), a.url)
    if a.action == "measure":
        return with_server(lambda url: measure_json(url, a.work, a.budget, a.smoke), a.url)
    margin = a.margin
    if margin is None:
        with open(a.budget) as f:
            margin = json.load(f)["margin"]
    return with_server(lambda url: write_budget(url, a.work, a.runs, margin, a.why, a.budget),
                       a.url)


if __name__ == "__main__":
    sys.exit(main())
