"""Writes the benchmark page (Markdown) and its plots (PNG, matplotlib) from bench/run.py's
results.json. `python bench/report.py build/bench/results.json --page P --img D` redraws them
without measuring again."""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "openresty"))
from section import section as openresty_section  # noqa: E402

NOT_YET = "not measured yet"
LUA_NAMES = {"lua5.4": "Lua 5.4", "luajit": "LuaJIT"}


# ---- reading the results ------------------------------------------------------------------

class Results:
    def __init__(self, results):
        self.r = results
        self.meta, self.p, self.steps = results["meta"], results["params"], results["steps"]

    def data(self, name):
        s = self.steps.get(name)
        return s["data"] if s and s.get("ok") else None

    def rows(self, measure):
        """Every row of every successful step of `measure`, in step order."""
        out = []
        for name, s in self.steps.items():
            if s.get("measure") == measure and s.get("ok"):
                for row in s["data"].get("rows", []):
                    out.append(dict(row, _step=name))
        return out

    def failed(self, measure):
        return [n for n, s in self.steps.items() if s.get("measure") == measure and not s["ok"]]

    def row(self, measure, impl, **match):
        for row in self.rows(measure):
            if row.get("impl") == impl and all(row.get(k) == v for k, v in match.items()):
                return row
        return None

    def limits(self):
        d = self.data("limits")
        if not d:
            return None, None
        by = {r["impl"]: r for r in d["rows"]}
        return by["ping"]["cycles_per_s"], by["bare-scripts"]["cycles_per_s"]

    def cycles_rows(self):
        """Measure 1's rows, C, Lua and Python together: (label, cycles/s, kind, of the bare
        loop, of two PINGs, paired). Paired ratios come from bursts run beside the limit in one
        process (C, Python); the others (Lua, a library measured elsewhere) are divided by the
        limits' own medians."""
        ping, bare = self.limits()
        rows = []

        def add(label, r, kind):
            if r["impl"] in ("ping", "bare-scripts"):
                return
            if "of_bare" in r:
                rows.append((label, r["cycles_per_s"], kind, r["of_bare"], r["of_ping"], True))
            else:
                rows.append((label, r["cycles_per_s"], kind, bare and r["cycles_per_s"] / bare,
                             ping and r["cycles_per_s"] / ping, False))
        core = self.data("core")
        if core:
            for r in core["rows"]:
                add(r["label"], r, "redlease")
        for r in self.rows("cycles"):
            add(r["label"] + (", watchdog" if r["impl"] == "redlease" else ""), r,
                "redlease" if r["impl"].startswith("redlease") else "peer")
        for name, s in self.steps.items():
            if s.get("measure") == "lua" and s.get("ok"):
                interp = name.split("-", 1)[1]
                for r in s["data"]["rows"]:
                    label = r["label"].replace(s["data"]["interpreter"],
                                               "redlease " + LUA_NAMES.get(interp, interp))
                    add(label, r, "redlease")
        return rows


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def n0(x):
    return "–" if x is None else f"{x:,.0f}"


def f2(x):
    return "–" if x is None else f"{x:.2f}"


NA = "n/a"  # a figure the library's command could not measure (left out, or null)


def na(fmt, x):
    return NA if x is None else fmt(x)


def ms(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- goals -----------------------------------------------------------------------------------

def goals(R):
    """[(key, goal, this run, verdict)]; verdict is 'met', 'not met' or NOT_YET."""
    out = []
    ping, bare = R.limits()
    py = R.row("cycles", "redlease")
    peers = [r for r in R.rows("cycles") if not r["impl"].startswith("redlease")
             and r["impl"] not in ("ping", "bare-scripts", "redisson")]  # goal (1): Python peers
    if py and bare:
        frac = py.get("of_bare", py["cycles_per_s"] / bare)
        best_peer = max(peers, key=lambda r: r["cycles_per_s"]) if peers else None
        ahead = all(py["cycles_per_s"] > r["cycles_per_s"] for r in peers)
        fixed = R.row("cycles", "redlease-fixed")
        text = f"{frac:.2f} of the bare loop (watchdog, the default" + (
            f"; fixed lease {fixed.get('of_bare', fixed['cycles_per_s'] / bare):.2f}" if fixed
            else "") + "); " + (
            f"best peer {best_peer['label']} {n0(best_peer['cycles_per_s'])}/s vs "
            f"{n0(py['cycles_per_s'])}/s" if best_peer else "no peer measured")
        out.append(("1", "(1) redlease Python ≥ 0.9 of the bare-hiredis script loop, and ahead of "
                    "every Python peer", text, "met" if frac >= 0.9 and ahead else "not met"))
    par = R.row("parallel", "redlease")
    rpy = R.row("parallel", "redis-py")
    ceiling = R.data("ceiling")
    if par and rpy and ceiling:
        x, c = par["cycles_per_s"] / rpy["cycles_per_s"], par["cycles_per_s"] / ceiling["cycles_per_s"]
        c16 = R.row("parallel", f"redlease-c-pool{R.p['parallel_threads']}")
        out.append(("1b", "(1b) 16 threads: ≥ 3× redis-py's Lock and ≥ 0.5 of the server's ceiling",
                    f"{x:.1f}× redis-py; {c:.2f} of the ceiling" + (
                        f" (the C core with a connection per thread: "
                        f"{c16['cycles_per_s'] / ceiling['cycles_per_s']:.2f})" if c16 else ""),
                    "met" if x >= 3 and c >= 0.5 else "not met"))
    ho = {r["impl"]: r for r in R.rows("handoff")}
    if "redlease" in ho:
        med = statistics.median(ho["redlease"]["latencies_ms"])
        parts, ok = [f"median {med:.3f} ms"], med <= 1.0
        if "redis-py" in ho:
            x = statistics.median(ho["redis-py"]["latencies_ms"]) / med
            parts.append(f"{x:.0f}× better than redis-py")
            ok = ok and x >= 30
        faster = [r["label"] for i, r in ho.items() if i != "redlease"
                  and statistics.median(r["latencies_ms"]) < med]
        parts.append("faster peer: " + ", ".join(faster) if faster else "no peer faster")
        ok = ok and not faster
        out.append(("2", "(2) hand-off median ≤ 1 ms on loopback, ≥ 30× better than redis-py, no peer "
                    "faster", "; ".join(parts), "met" if ok else "not met"))
    red = [r for r in R.rows("contended") if r["impl"] == "redisson"]
    out.append(("3", "(3) contended: ≥ Redisson's hand-offs per second, fairness at least as even",
                contended_text(R) if red else "Redisson's rows: " + NOT_YET,
                (compare_contended(R) if red else NOT_YET)))
    wd = R.data("watchdog")
    if wd:
        big = max(wd["rows"], key=lambda r: r["holds"])
        cpu_frac = big["round_cpu_ms_median"] / wd["period_ms"]
        per_k = big["round_trips_per_round"] / (big["holds"] / 1000)
        ok = big["holds"] >= 100000 and per_k <= 1 and cpu_frac <= 0.10 and big["lost"] == 0 \
            and big["lost_events"] == 0
        out.append(("4", "(4) 100,000 holds renewed with ≤ 1 round trip per 1,000 holds, a round's "
                    "CPU ≤ 10% of its period, 0 lost",
                    f"{n0(big['holds'])} holds: {big['round_trips_per_round']:.2f} round trip(s) "
                    f"per round ({per_k:.3f} per 1,000 holds), CPU {big['round_cpu_ms_median']:.1f}"
                    f" ms = {100 * cpu_frac:.1f}% of the {wd['period_ms'] / 1000:g} s period, "
                    f"{big['lost']} lost", "met" if ok else
                    "not met" if big["holds"] >= 100000 else "not measured at this size"))
    gil = R.row("gil", "redlease")
    if gil:
        last = max(gil["points"], key=lambda p: p["waiters"])
        out.append(("5", "(5) GIL: CPU-bound thread ≥ 0.9 of its solo rate at 32 waiters",
                    f"{last['fraction']:.2f} at {last['waiters']} waiters",
                    "not measured at this size" if last["waiters"] < 32 else
                    "met" if last["fraction"] >= 0.9 else "not met"))
    if wd:
        big = max(wd["rows"], key=lambda r: r["holds"])
        out.append(("6", "(6) ≤ 512 bytes per held lock in the core",
                    f"{big['bytes_per_held_lock']:.0f} bytes (hold {big['bytes_per_hold']:.0f} + "
                    f"lock handle {big['bytes_per_lock_handle']:.0f})",
                    "met" if 0 < big["bytes_per_held_lock"] <= 512 else "not met"))
    return out


def contended_text(R):
    parts = []
    for w in R.p["contended_workers"]:
        a, b = R.row("contended", "redlease", workers=w), R.row("contended", "redisson", workers=w)
        if not a or not b:
            parts.append(f"{w} workers: " + ("Redisson " + NOT_YET if a else "redlease failed"))
            continue
        parts.append(f"{w} workers: {n0(a['handoffs_per_s'])} vs Redisson {n0(b['handoffs_per_s'])} "
                     f"hand-offs/s, min/max per worker {a['per_worker_min'] / max(1, a['per_worker_max']):.2f}"
                     f" vs {b['per_worker_min'] / max(1, b['per_worker_max']):.2f}")
    return "; ".join(parts)


def compare_contended(R):
    ok = True
    for w in R.p["contended_workers"]:
        a, b = R.row("contended", "redlease", workers=w), R.row("contended", "redisson", workers=w)
        if not a or not b:
            return "not met"
        even = lambda r: r["per_worker_min"] / max(1, r["per_worker_max"])  # noqa: E731
        ok = ok and a["handoffs_per_s"] >= b["handoffs_per_s"] and even(a) >= even(b)
    return "met" if ok else "not met"


# ---- plots -----------------------------------------------------------------------------------

def plots(R, img):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(img, exist_ok=True)
    made = {}
    colour = {"redlease": "#c0392b", "peer": "#7f8c8d"}

    def save(fig, name):
        path = os.path.join(img, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made[name] = path

    rows = R.cycles_rows()
    if rows:
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.6))
        labels = [r[0] + ("" if r[5] else " †") for r in rows][::-1]
        ax.barh(labels, [r[3] or 0 for r in rows][::-1], color=[colour[r[2]] for r in rows][::-1])
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.axvline(0.9, color="black", linestyle=":", linewidth=1)
        ax.text(1.0, len(rows) - 0.4, " bare loop", fontsize=8, va="top")
        ax.text(0.9, len(rows) - 0.4, "goal ", fontsize=8, va="top", ha="right")
        ax.set_xlabel("acquire+release cycles, as a fraction of the bare script loop (median)")
        ax.set_title("1. Uncontended cycle, one thread")
        save(fig, "cycles.png")

    par = R.rows("parallel")
    ceiling = R.data("ceiling")
    if par:
        fig, ax = plt.subplots(figsize=(8, 2.8))
        ax.barh([r["label"] for r in par][::-1], [r["cycles_per_s"] for r in par][::-1],
                color=[colour["redlease" if r["impl"].startswith("redlease") else "peer"]
                       for r in par][::-1])
        if ceiling:
            ax.axvline(ceiling["cycles_per_s"], color="black", linestyle="--", linewidth=1)
            ax.text(ceiling["cycles_per_s"], len(par) - 0.4, " server ceiling", fontsize=8,
                    va="top", ha="right")
        ax.set_xlabel(f"acquire+release cycles per second, {R.p['parallel_threads']} threads")
        ax.set_title("1b. Parallel cycles, one process")
        save(fig, "parallel.png")

    ho = R.rows("handoff")
    core = R.data("core")
    if ho:
        fig, ax = plt.subplots(figsize=(8, 3.6))
        series = [(r["label"], r["latencies_ms"]) for r in ho]
        if core:
            series.insert(1, (core["handoff"]["label"], core["handoff"]["latencies_ms"]))
        for label, lat in series:
            lat = sorted(lat)
            ax.plot(lat, [(i + 1) / len(lat) for i in range(len(lat))], label=label,
                    linewidth=2 if label.startswith("redlease") else 1.2)
        ax.set_xscale("log")
        ax.set_xlabel("release → waiter holds it (ms, log scale)")
        ax.set_ylabel("fraction of hand-offs")
        ax.set_title("2. Hand-off latency, CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "handoff.png")

    con = R.rows("contended")
    if con:
        impls = list(dict.fromkeys(r["label"] for r in con))
        workers = R.p["contended_workers"]
        fig, ax = plt.subplots(figsize=(8, 4))
        width = 0.8 / len(impls)
        for k, label in enumerate(impls):
            vals = [next((r["handoffs_per_s"] for r in con if r["label"] == label
                          and r["workers"] == w), 0) for w in workers]
            ax.bar([i + k * width for i in range(len(workers))], vals, width, label=label)
        ax.set_xticks([i + width * (len(impls) - 1) / 2 for i in range(len(workers))])
        ax.set_xticklabels([f"{w} workers" for w in workers])
        ax.set_yscale("log")
        ax.set_ylabel("hand-offs per second (log)")
        ax.set_title("3. One contended lock, workers over 4 processes")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
        save(fig, "contended.png")

    wd = R.data("watchdog")
    if wd:
        rows = wd["rows"]
        fig, ax = plt.subplots(figsize=(6.5, 3.6))
        holds = [r["holds"] for r in rows]
        ax.plot(holds, [r["round_ms_median"] for r in rows], "o-", label="round duration (wall)")
        ax.plot(holds, [r["round_cpu_ms_median"] for r in rows], "s-", label="round CPU (watchdog thread)")
        ax.axhline(wd["period_ms"] * 0.1, color="black", linestyle=":", linewidth=1)
        ax.text(holds[0], wd["period_ms"] * 0.1, " 10% of the period", fontsize=8, va="bottom")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("holds in one client")
        ax.set_ylabel("ms per renewal round")
        ax.set_title("4. Watchdog scale")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "watchdog.png")

    gil = R.rows("gil")
    if gil:
        fig, ax = plt.subplots(figsize=(6.5, 3.4))
        for r in gil:
            ax.plot([p["waiters"] for p in r["points"]], [p["fraction"] for p in r["points"]],
                    "o-", label=r["label"], linewidth=2 if r["impl"] == "redlease" else 1.2)
        ax.axhline(0.9, color="black", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads waiting on held locks")
        ax.set_ylabel("CPU-bound thread, fraction of solo")
        ax.set_title("5. GIL friendliness")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "gil.png")

    mem = R.row("memory-python", "redlease")
    if mem:
        s = mem["rss"]["samples"]
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        ax.plot([c for c, _ in s], [r / 1024 for _, r in s], "-")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("acquire+release cycles")
        ax.set_ylabel("RSS (MiB)")
        ax.set_title("6. Python process RSS over cycles")
        ax.grid(True, alpha=0.3)
        save(fig, "rss.png")
    return made


# ---- the page --------------------------------------------------------------------------------

def write(results, page, img):
    """Writes the page and the plots; returns a list of problems (sections that could not be
    written), for the smoke run's count."""
    R = Results(results)
    problems = []
    try:
        made = plots(R, img)
    except Exception as e:  # the page is still written, and says so
        made, problems = {}, problems + [f"plots: {e!r}"]
    rel = os.path.relpath(img, os.path.dirname(page))

    def pic(name, alt):
        return f"![{alt}]({rel}/{name})\n" if name in made else ""

    m, p = R.meta, R.p
    out = []
    w = out.append
    w("# Benchmarks\n")
    w("<!-- Written by bench/report.py from a `make bench` run; edit the generator, not this "
      "page. -->\n")
    w(f"One run of `{m['command']}` ({m['date']}, {m['seconds'] / 60:.1f} minutes): every "
      "figure below comes from the same run against one throwaway redis-server on loopback, "
      "started by the harness on a free port. Peers are installed into the build's virtualenv "
      "for the benchmark only; they are not dependencies of redlease.\n")
    w(f"**Figures move between runs.** The machine has {m['cores']} cores shared by Redis, the "
      "clients and anything else running (other test suites may run at the same time: the "
      f"1-minute load average was {m['loadavg_start']:.2f} at the start and "
      f"{m['loadavg_end']:.2f} at the end). Expect ±20% on throughputs and more on tail "
      "latencies; compare rows of the same run, not runs.\n")
    w("## The run\n")
    lua = ", ".join(v for v in m["lua"].values() if v) or "–"
    v = m["versions"]
    w(table(["", ""], [
        ["command", f"`{m['command']}` (runs `{m['argv']}`)"],
        ["machine", f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, "
                    f"Linux {m['kernel']}"],
        ["Redis", m["redis"]],
        ["redlease", f"{v.get('redlease')} at {m['commit']}; hiredis {m['hiredis']}; {m['cc']}"],
        ["Python", f"{m['python']}; Lua: {lua}"],
        ["peers", f"redis-py {v.get('redis-py')}, python-redis-lock {v.get('python-redis-lock')}, "
                  f"pottery {v.get('pottery')}; Redisson: " + (NOT_YET if not results['redisson'] else
                  redisson_versions(R))],
        ["sizes", ", ".join(f"{k} {v}" for k, v in p.items())],
    ]) + "\n")

    # goals
    w("## Goals\n")
    w("Targets from issue 7, not test assertions.\n")
    gl = goals(R)
    w(table(["goal", "this run", "verdict"],
            [[g, t, f"**{v}**" if v in ("met", "not met") else v] for _, g, t, v in gl]) + "\n")
    missed = [k for k, _, _, v in gl if v == "not met"]
    if missed:
        w("Missed here: " + ", ".join(f"({k})" for k in missed) + "; the causes and fixes are "
          "in [the closing notes](#notes).\n")

    # 1
    ping, bare = R.limits()
    w("## 1. Uncontended cycle\n")
    w(f"Acquire + release of one free lock, one thread. This machine's speed changes from one "
      "second to the next (by up to 2× here), so rows are not compared across long runs: the C "
      "core's rows and the Python rows each run in one process in "
      f"{p['cycle_bursts']} short bursts ({n0(p['cycles'] // p['cycle_bursts'])} cycles; a slow "
      "peer stops earlier), and every burst runs between two bursts of the bare script loop "
      "(after a burst of PINGs) on a connection of the same process. Each row shows its median "
      "rate over the bursts and the medians of its ratios to the limits measured around it. "
      "The limits: two PING round trips (a cycle needs at least two), and redlease's own "
      "acquire and release scripts (texts taken from the core, `rl_script_text`) issued back to "
      "back by a bare hiredis loop (`bench/c/bare_loop.c`). The Lua rows run in processes of "
      f"their own, {p['cycle_bursts']} times each, every run between two runs of `bench_limits` "
      "(the limits on their own), and are divided by those. The limit rows below are the "
      f"medians of the {R.data('limits')['runs'] if R.data('limits') else 0} `bench_limits` "
      "runs, taken apart from the rows: their two ratios to each other are the least steady "
      "figures of the table.\n")
    rows = []
    if ping:
        rows.append(["limit: two PING round trips", n0(ping), "1.00", f2(ping and bare and bare / ping)])
        rows.append(["limit: bare-hiredis script loop", n0(bare), f2(bare / ping), "1.00"])
    for label, rate, _, of_bare, of_ping, paired in R.cycles_rows():
        mark = "" if paired else " †"
        rows.append([label, n0(rate), f2(of_ping) + mark, f2(of_bare) + mark])
    if not any(r["impl"] == "redisson" for r in R.rows("cycles")):
        rows.append(["Redisson (Java)", NOT_YET, "", ""])
    w(table(["acquire+release, one thread", "cycles/s", "of two PINGs", "of the script loop"],
            rows) + "\n")
    if any(not r[5] for r in R.cycles_rows()):
        w("† Measured apart from the limits and divided by the limits' medians, so these ratios "
          "carry the machine's swings.\n")
    w(pic("cycles.png", "cycles per second, one thread"))
    w("A redlease cycle is the two script calls plus the unlock latch's DEL, sent without "
      "waiting and read with the next exchange. redis-py's Lock is `SET NX PX` plus a Lua "
      "release; python-redis-lock also deletes and pushes its signal list on release; pottery "
      "runs each call through a thread pool.\n")

    # 1b
    w(f"## 1b. Parallel cycles: {p['parallel_threads']} threads, one process\n")
    w(f"Each thread cycles on its own lock name for {p['parallel_seconds']:g} s; the aggregate "
      "is the total over the elapsed time; redlease in watchdog mode (the default) and with a "
      "fixed lease. redlease's client shares its connection pool "
      "(4 connections) among the threads; the peers use redis-py's pool (one connection per "
      "thread). The C rows (`bench/c/bench_parallel.c`, watchdog mode) show the core alone with "
      "the same pool of 4 and with one connection per thread. The server's ceiling is `redis-benchmark` with "
      f"{p['parallel_threads']} clients running EVALSHA of redlease's acquire script (fresh "
      "keys) and of its release script (a key held with a huge count: the script decrements, "
      "renews and sets the latch, five Redis calls where a full release does six); a cycle's "
      "ceiling is 1 / (1/acquire + 1/release).\n")
    rpy = R.row("parallel", "redis-py")
    ceiling = R.data("ceiling")
    rows = []
    if ceiling:
        rows.append(["server ceiling (redis-benchmark, EVALSHA)", n0(ceiling["cycles_per_s"]),
                     f"acquire {n0(ceiling['acquire_per_s'])}/s, release "
                     f"{n0(ceiling['release_per_s'])}/s", "", "1.00"])
    for r in R.rows("parallel"):
        rows.append([r["label"], n0(r["cycles_per_s"]),
                     f"{n0(r.get('per_thread_min'))} – {n0(r.get('per_thread_max'))}",
                     f2(rpy and r["cycles_per_s"] / rpy["cycles_per_s"]),
                     f2(ceiling and r["cycles_per_s"] / ceiling["cycles_per_s"])])
    if not any(r["impl"] == "redisson" for r in R.rows("parallel")):
        rows.append(["Redisson (Java)", NOT_YET, "", "", ""])
    w(table(["", "cycles/s", "cycles per thread (min – max)", "× redis-py", "of the ceiling"],
            rows) + "\n")
    w(pic("parallel.png", "parallel cycles"))

    # 2
    w("## 2. Hand-off latency\n")
    w(f"{p['handoffs']} hand-offs per library: a holder process releases, a waiter in another "
      "process is already blocked in acquire; the latency runs from just before the release "
      "call to the moment the waiter's acquire returns (CLOCK_MONOTONIC, one clock for both "
      "processes). It includes how the waiter is woken (redlease: pub/sub; python-redis-lock: "
      "BLPOP on a signal list; redis-py: polling every 0.1 s; pottery: retries after a random "
      "sleep of up to 0.2 s) and the waiter's acquire round trip. For redis-py the release "
      "falls at a random point of the waiter's poll interval, as it would in real use. The C "
      "row is the core between two clients of one process (`bench_core`).\n")
    ho = R.rows("handoff")
    core = R.data("core")
    base = next((statistics.median(r["latencies_ms"]) for r in ho if r["impl"] == "redlease"), None)
    series = [(r["label"] + (", two processes" if r["impl"] == "redlease" else ""),
               r["latencies_ms"]) for r in ho]
    if core:
        series.insert(1, (core["handoff"]["label"], core["handoff"]["latencies_ms"]))
    rows = []
    for label, lat in series:
        med = statistics.median(lat)
        rows.append([label, ms(med), ms(pct(lat, 0.9)), ms(pct(lat, 0.99)), ms(max(lat)),
                     len(lat), f2(base and med / base)])
    if not any(r["impl"] == "redisson" for r in ho):
        rows.append(["Redisson (Java)", NOT_YET, "", "", "", "", ""])
    w(table(["", "median ms", "p90", "p99", "max", "hand-offs", "median / redlease's"], rows)
      + "\n")
    w(pic("handoff.png", "hand-off latency CDF"))

    # 3
    w("## 3. Contended throughput and fairness\n")
    w(f"One lock; {', '.join(map(str, p['contended_workers']))} workers (threads) spread over "
      f"{p['contended_procs']} processes, each looping acquire (waiting as long as needed) → "
      f"note (time, worker) → release, for {p['contended_seconds']:g} s. A hand-off is an "
      "acquisition by another worker than the previous one (a worker that takes the lock again "
      "at once is not one); sorting the notes by CLOCK_MONOTONIC gives the order, since the "
      "lock serialises them. Fairness: the fewest and most acquisitions of one worker.\n")
    rows = []
    for wk in p["contended_workers"]:
        for r in R.rows("contended"):
            if r["workers"] == wk:
                rows.append([wk, r["label"], n0(r["handoffs_per_s"]), n0(r["acquisitions_per_s"]),
                             f"{r['per_worker_min']:,} / {r['per_worker_max']:,}",
                             f2(r["per_worker_min"] / max(1, r["per_worker_max"]))])
        if not any(r["impl"] == "redisson" and r["workers"] == wk for r in R.rows("contended")):
            rows.append([wk, "Redisson (Java)", NOT_YET, "", "", ""])
    w(table(["workers", "", "hand-offs/s", "acquisitions/s", "per worker min / max",
             "min / max"], rows) + "\n")
    w(pic("contended.png", "contended hand-offs per second"))

    # 4
    wd = R.data("watchdog")
    w("## 4. Watchdog scale\n")
    if wd:
        w(f"One C client takes N watchdog-mode holds on N names (4 threads), then sits for "
          f"{p['wd_periods']} watchdog periods. To keep the run short the watchdog timeout is "
          f"{wd['watchdog_timeout_ms'] / 1000:g} s, so the period is "
          f"{wd['period_ms'] / 1000:g} s (the default is 30 s and 10 s: the same round against "
          "a 5× longer period). Method (`bench/c/bench_watchdog.c`): the program is linked "
          "with `-Wl,--wrap` around the core's `rl_cond_wait_until` and `rl_scripts_run`, so it "
          "sees, without any change to the core, when the watchdog thread wakes, when it calls "
          "the renewal script and when it goes back to sleep; a round is the span from that "
          "wake-up to that sleep, its CPU time is the watchdog thread's "
          "`CLOCK_THREAD_CPUTIME_ID` over the span, and \"Redis time\" is the pipelined "
          "exchange inside it. Round trips and script calls per round are `rl_client_stats` "
          "deltas; process CPU per round is `getrusage` over the window divided by the rounds "
          "(it also counts the event thread). The window opens after a first round over all N "
          "(which may open the watchdog's connection), and only rounds inside it are timed. "
          "Lost: `RL_EVENT_LOST` events and `rl_lock_lost` over every lock; live "
          "keys: the N keys with a lease left at the end (pipelined PTTL).\n")
        rows = []
        for r in R.rows("watchdog"):
            g = lambda k: r.get(k)  # noqa: E731  (a library measured elsewhere may lack some)
            period = R.steps[r["_step"]]["data"].get("period_ms", wd["period_ms"])
            lost = None if g("lost") is None and g("lost_events") is None else \
                (g("lost") or 0) + (g("lost_events") or 0)
            rows.append([("Redisson: " if r["impl"] == "redisson" else "") + na(n0, g("holds")),
                         na(lambda x: f"{x:.2f} s", g("acquire_s")),
                         na(ms, g("round_ms_median")), na(ms, g("round_net_ms_median")),
                         na(f2, g("round_trips_per_round")), na(n0, g("calls_per_round")),
                         na(ms, g("round_cpu_ms_median")),
                         na(lambda x: f"{100 * x / period:.2f}%", g("round_cpu_ms_median")),
                         na(ms, g("process_cpu_ms_per_round")), na(n0, g("full_rounds")),
                         na(n0, lost), na(n0, g("live_keys"))])
        if not any(r["impl"] == "redisson" for r in R.rows("watchdog")):
            rows.append(["Redisson (Java)", NOT_YET] + [""] * 10)
        w(table(["holds", "taking them", "round ms (median)", "of which Redis", "round trips/round",
                 "script calls/round", "round CPU ms", "CPU / period", "process CPU ms/round",
                 "rounds timed", "lost", "live keys"], rows) + "\n")
        if any(r["impl"] == "redisson" for r in R.rows("watchdog")):
            w(REDISSON_WATCHDOG)
        w(pic("watchdog.png", "watchdog round time and CPU"))
    else:
        w("The watchdog step failed in this run: " + "; ".join(R.failed("watchdog")) + "\n")

    # 5
    w("## 5. GIL friendliness\n")
    w(f"A CPU-bound Python thread counts loop iterations for {p['gil_seconds']:g} s while 1, 8 "
      "or 32 other threads of its process wait on locks a second client holds (each on its own "
      "lock); the figure is its rate as a fraction of its solo rate (the mean of a solo run "
      "just before and just after). A waiter that sleeps with the GIL released costs nothing; "
      "one that polls takes the GIL at every poll. Fractions above 1 are noise.\n")
    rows = []
    for r in R.rows("gil"):
        rows.append([r["label"]] + [f2(pt["fraction"]) for pt in r["points"]])
    w(table(["waiters →"] + [str(x) for x in p["gil_waiters"]], rows) + "\n")
    w(pic("gil.png", "GIL friendliness"))

    # 6
    w("## 6. Memory\n")
    if wd:
        w("The core, from the watchdog run above: glibc `mallinfo2` (bytes in use plus mmapped "
          "blocks) before the client, after making the N lock handles (`rl_lock_new`), and "
          "right after the first renewal round over all N holds ended (no round buffer alive); "
          "the difference over N. The hold figure also carries the client's connections, "
          "which weigh nothing at 100,000.\n")
        rows = [[n0(r["holds"]), f"{r['bytes_per_lock_handle']:.0f}", f"{r['bytes_per_hold']:.0f}",
                 f"{r['bytes_per_held_lock']:.0f}"] for r in wd["rows"]]
        w(table(["holds", "bytes per lock handle", "bytes per hold", "bytes per held lock"],
                rows) + "\n")
    mem = R.row("memory-python", "redlease")
    if mem:
        lo, rs = mem["lock_object"], mem["rss"]
        w(f"Python, per `Lock` object ({n0(lo['objects'])} of them on as many names): "
          f"{lo['python_bytes']:.0f} bytes of Python objects (tracemalloc) + "
          f"{lo['core_bytes']:.0f} bytes of the core's handle behind it (mallinfo2, in a second "
          f"pass) = **{lo['total_bytes']:.0f} bytes**.\n")
        flat = abs(rs["growth_after_warmup_kb"]) <= max(1024, 0.02 * rs["rss_at_10pct_kb"])
        w(f"RSS over {n0(rs['cycles'])} acquire+release cycles (watchdog mode, {rs['threads']} "
          f"threads on their own locks, {rs['seconds']:.0f} s): {rs['rss_start_kb'] / 1024:.1f} "
          f"MiB at the start, {rs['rss_at_10pct_kb'] / 1024:.1f} MiB after 10% of the cycles, "
          f"{rs['rss_end_kb'] / 1024:.1f} MiB at the end (max {rs['rss_max_kb'] / 1024:.1f}): "
          f"{'**flat**' if flat else '**not flat**'} "
          f"({rs['growth_after_warmup_kb']:+,} KiB after the first 10%).\n")
        w(pic("rss.png", "RSS over cycles"))

    w(openresty_section(results))  # bench/openresty/section.py

    # failures
    bad = [(n, s) for n, s in R.steps.items() if not s.get("ok")]
    if bad:
        w("## Steps that failed in this run\n")
        w(table(["step", "error"], [[n, s.get("error", "").splitlines()[-1][:160].replace("|", "/")
                                     if s.get("error") else ""] for n, s in bad]) + "\n")

    w("## Notes\n")
    causes = [CAUSES[k] for k in missed if k in CAUSES]
    if causes:
        w("Why the goals missed in this run were missed, and what would fix them (found by "
          "profiling outside the timed run: `perf record`, `perf stat`, `strace -c`, and "
          "scratch copies of the core with one change each):\n")
        for text in causes:
            w(text)
    if "1" not in missed:
        w(NOTE_CYCLE_COSTS)
    w(NOTES_ALWAYS)
    w("\n## Redisson's rows\n")
    w("The harness (`bench/run.py`) takes one more command per library: with `BENCH_REDISSON` "
      "set to a command, it runs `$BENCH_REDISSON MEASURE URL --key value ...` for `cycles`, "
      "`parallel`, `handoff`, `contended` and `watchdog`, and reads the same JSON as the Python "
      "scripts print (see `bench/README.md`). `make bench` sets it to `bench/redisson/run`, "
      "which runs the Java program `Bench.java` of the interop Maven project "
      "(`tests/interop/java`, built into `build/interop` by `make interop-java`); "
      "`BENCH_REDISSON=` (empty) leaves the rows out, and they read \"not measured yet\".\n")
    if results["redisson"]:
        w(REDISSON_METHOD)
    os.makedirs(os.path.dirname(page), exist_ok=True)
    with open(page, "w") as f:
        f.write("\n".join(out))
    return problems


# Causes of missed goals and their fixes, found by profiling outside the timed run (perf record,
# perf stat, strace -c over 5,000-30,000 cycles, scratch copies of the core with one change each);
# printed for each goal the run misses. The key is the goal's number.
CAUSES = {
    "1": """\
**(1) One-thread cycles.** The Python row sits at the edge of the goal: in the runs made while
writing this harness it came out between 0.87 and 0.95 of the bare loop. The gap is not the
core's code: `perf record` of the
core's fixed-lease loop puts 88% of the client's CPU in the kernel (TCP over loopback and task
switches), 3% in hiredis and under 3% in the core. It is one more message per cycle: after the
release's answer the core sends the unlock latch's `DEL` in a write of its own, so a cycle is
three TCP sends and three commands for Redis where the bare loop has two. Per cycle (`perf stat`
task-clock, Redis's `INFO cpu`, quiet machine): client CPU 24 µs against 15, Redis CPU 26 µs
against 19. The other extra system calls (`rt_sigprocmask`/`rt_sigpending` ×12 for the SIGPIPE
guard, `poll` ×2, `getrandom` ×1: 21 system calls per cycle against 4, by `strace -c`) cost
about 0.15 µs each here, some 2 µs a cycle. (Watchdog mode used to wake the watchdog thread on
every acquire, 4.3 task switches per cycle instead of 2.0; the core now wakes it only when its
list was empty, and watchdog-mode cycles cost what fixed-lease ones do.) Fixes in the core: leave
the latch `DEL` in the connection's output buffer so that it goes out in the same write as the
next command on that connection (the latch has its own TTL meanwhile); then, for the last
microseconds, skip the SIGPIPE guard when SIGPIPE is already ignored (CPython
ignores it) and make request ids from a random per-client prefix and a counter.
""",
    "1b": """\
**(1b) Sixteen threads.** The command pool holds up to 16 connections, opened as concurrent
calls need them (it held 4 before); the C rows show the ceiling of one connection per thread.
`strace -c -f` of the Python run counts about 18 futex calls per cycle (the GIL changing hands,
the pool's and the client's mutexes). What is left is the per-cycle cost named under (1) (the
latch `DEL` in a write of its own) and the GIL.
""",
    "3": """\
**(3) Contended throughput and fairness.** redlease makes several times Redisson's hand-offs per
second at every worker count; where it misses, it is fairness with few workers: a worker that
releases takes the lock again (one round trip) before the waiter it woke gets there (a pub/sub
message, then a round trip), so with 2 workers one of them gets most acquisitions; Redisson,
several times slower per acquisition, gives its woken waiter more time. The figure moves a lot
between runs (0.20 to 0.93 at 2 workers). Both are non-fair locks. What would fix it: make a
release hand over to the woken waiter (the fair lock's queue, `client.fair_lock()`, does exactly
that, at the cost of a few round trips per hand-off); the plain lock keeps the faster,
Redisson-compatible behaviour.
""",
    "2": """\
**(2) Hand-off.** When python-redis-lock matches or beats redlease, it is because its waiter is
woken by `BLPOP` in the waiting thread itself and then makes one round trip, while redlease's
waiter is woken through the subscriber thread and, once it holds the lock, the last waiter on a
channel waits for Redis to confirm its `UNSUBSCRIBE` before `acquire` returns (`rl_sub_leave`):
one more round trip inside the hand-off. A scratch copy of the core that returns without waiting
for that confirmation cut the C hand-off median from about 0.125 to 0.10 ms and its p90 from
about 0.19 to 0.125 ms (3 runs of 300 hand-offs each). Fix in the core: let the subscriber thread
finish the unsubscription on its own (the channel's entry stays pinned until Redis confirms) and
return from `acquire` at once.
""",
    "6": """\
**(6) Bytes per held lock.** A held lock costs its `rl_lock` handle (the struct and one block for
the name and its keys) and its `rl_hold` entry (the struct, the name, the owner field, and its
share of the hash table's buckets; the request id only after a failed release).
""",
}

# Said in CAUSES["1"] too: printed only when goal (1) is met.
NOTE_CYCLE_COSTS = """\
- Either lease mode sends the unlock latch's `DEL` in a write of its own after each release
  (measure 1): leaving it in the output buffer to go out with the next command would save a TCP
  send per cycle on both sides.
"""

NOTES_ALWAYS = """\
- Hand-off (measure 2): the last waiter on a channel waits for Redis to confirm its
  `UNSUBSCRIBE` before `acquire` returns (`rl_sub_leave`); a scratch copy of the core that
  returns at once cut the C hand-off median by about a fifth (0.125 → 0.10 ms) and its p90 by a
  third.
- Watchdog (measure 4): a round is one pipelined write of one script call per 1,000 holds; its
  time is almost all Redis running the renewal scripts, and the client's CPU per round grows
  linearly with the holds (building the arguments, formatting the commands, reading the
  replies).
"""


def redisson_versions(R):
    vs = {r.get("version") for m in ("cycles", "parallel", "handoff", "contended", "watchdog")
          for r in R.rows(m) if r["impl"] == "redisson"}
    vs.discard(None)
    return (f"{', '.join(sorted(vs))} " if vs else "") + \
        "(Java, `bench/redisson/run`, see [Redisson's rows](#redissons-rows))"


REDISSON_METHOD = """\
How the Java rows were measured (`Bench.java`), each the way the Python script of the same measure
measures redlease and the Python peers:

- Redisson's `RLock` (`getLock`) in watchdog mode, as redlease's Python rows (not the
  fixed-lease ones): `tryLock()` for a single try, `lock()` to wait, `tryLock(wait, unit)` to
  wait at most that long; `unlock()` to release. One `RedissonClient` per JVM with Redisson's
  default configuration (connection pools, threads, codec, script cache) apart from the address,
  on the JVM's default options (`BENCH_JAVA_OPTS` adds some).
- The JVM compiles hot code only after it has run a while, so each measure warms up first, and
  the warm-up counts nowhere: cycles, up to 3,000 cycles or 1 s (the Python rows: 50 cycles);
  parallel, 500 cycles per thread (Python: 20); hand-off, 30 hand-offs (Python: 1); each
  contended worker process, 500 cycles on a lock name of its own before the start.
- Cycles (1): one thread, `tryLock()` + `unlock()` in chunks of 100 until N cycles or S seconds.
  It runs in a process of its own, apart from the limits, so its ratios (†) are to the limits'
  medians. Parallel (1b): 16 threads of one client, each on its own lock name, after a common
  start.
- Hand-off (2): the waiter is a second JVM of the same program, started by the holder, driven
  over its stdin; 3 ms after "go" the holder reads `System.nanoTime`, calls `unlock()`, and the
  waiter reads `System.nanoTime` when its `lock()` returns. HotSpot on Linux reads
  `System.nanoTime` from `CLOCK_MONOTONIC`, one clock for every process of the machine (the
  Python scripts' `time.monotonic`); each run checks it first: 20 times, the waiter's reading
  must fall between two readings of the holder's taken around the request, or the run fails.
- Contended (3): W worker threads over P JVMs (the parent JVM only starts them and counts),
  each looping `tryLock(until the end)` → note `System.nanoTime` → `unlock()`; hand-offs and
  per-worker counts from the sorted notes, as `contended.py`.
- Watchdog (4): see the Redisson note under [4](#4-watchdog-scale).
"""

REDISSON_WATCHDOG = """\
The Redisson rows: one `RedissonClient` with `Config.setLockWatchdogTimeout` set to the same
timeout takes N watchdog-mode holds (`tryLock()` on N names, 4 threads) and sits for the same
number of periods; Redisson renews every timeout / 3, each round as `EVAL` calls of up to
`lockWatchdogBatchSize` (100, the default) holds each, and schedules the next round a period
after the last one *ended*, so a long round stretches its period and fewer rounds fit in the
window. Method: a netty handler added to each of the client's connections
(`Config.setNettyHook`) sees every command written and, through its promise, when its reply came
back; in the window the client sends nothing but renewals. A round is its calls, from the first
write to the last reply (the client's work before the first write is not in it, so there is no
\"of which Redis\" figure: n/a). Round trips per round counts pipelined flights: a new one starts
when a call is written while none of the round's calls is in flight (Redisson writes a round's
calls at once over its pooled connections, so this is about 1, while script calls per round is
holds / 100; a call Redis refused, such as an `EVALSHA` answered `NOSCRIPT` that Redisson then
sends again as `EVAL`, counts as a call). The server's `INFO commandstats` (`EVAL` + `EVALSHA` calls) over the window gives
the same calls per round. Round CPU is the CPU time of Redisson's threads (`redisson-netty-*`,
`redisson-timer-*`; `ThreadMXBean`) from the quiet point after one round to the quiet point
after the next; process CPU per round is `OperatingSystemMXBean.getProcessCpuTime` over the
window divided by the rounds, and also counts the JVM's compiler and garbage-collector threads
(in 10 ms ticks). Lost: holds whose key has no lease left at the end (one batch of `PTTL`) plus
holds a renewal reply said were gone. The window opens after a first round over all N has ended.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results")
    ap.add_argument("--page", required=True)
    ap.add_argument("--img", required=True)
    a = ap.parse_args()
    with open(a.results) as f:
        problems = write(json.load(f), os.path.abspath(a.page), os.path.abspath(a.img))
    for pr in problems:
        print(pr)


if __name__ == "__main__":
    main()
