"""The benchmark harness: every measure of docs/benchmarks.md in one run, on one throwaway
redis-server, then the page and its plots.

    python bench/run.py --out build/bench --page docs/benchmarks.md --img docs/img   (make bench)
    python bench/run.py --smoke --out build/bench-smoke                        (make bench-smoke)

Each measurement is one command that prints one JSON object ({"measure": ..., "rows": [...]});
its output goes to OUT/raw/<step>.json and its stderr to OUT/logs/<step>.log, and everything to
OUT/results.json, from which bench/report.py writes the page. Redis is flushed between steps.

Another library is added by one more command per measure. Redisson's rows come from
$BENCH_REDISSON when it is set (see bench/README.md): it is run as
    $BENCH_REDISSON MEASURE URL --key value ...
for MEASURE in cycles, parallel, handoff, contended, watchdog, semaphore, and must print the
same JSON with "impl": "redisson". Without it, those rows read "not measured yet".

--smoke runs the same steps with tiny sizes, never writes docs/, and writes a count of the
steps that ran and gave sane output to build/results/bench-smoke.txt ("N passed, N failed").
No timing is ever checked.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "python"))

import asyncio_steps  # noqa: E402
import cluster_steps  # noqa: E402
import family_steps  # noqa: E402
import profile_steps  # noqa: E402
from peers import IMPLS, PEERS, available, version_of  # noqa: E402

SIZES = {
    "full": dict(cycles=16000, cycle_bursts=8, cycle_seconds=8.0,
                 c_handoffs=500, parallel_threads=16, parallel_seconds=3.0, rb_requests=100000,
                 handoffs=250, contended_seconds=3.0, contended_workers=[2, 8, 32],
                 contended_procs=4, wd_timeout_ms=6000, wd_periods=3,
                 wd_sizes=[1000, 10000, 100000], wd_big=1000000, wd_big_timeout_ms=30000,
                 wd_big_periods=2, wait_threads=10000, aio_wait_tasks=100000,
                 gil_seconds=2.0, gil_waiters=[1, 8, 32],
                 mem_objects=100000, mem_cycles=1000000, mem_threads=4,
                 openresty_seconds=5, openresty_handoffs=100, openresty_rounds=3,
                 cluster_holds=100000),
    "smoke": dict(cycles=400, cycle_bursts=2, cycle_seconds=1.0,
                  c_handoffs=20, parallel_threads=16, parallel_seconds=0.3, rb_requests=2000,
                  handoffs=10, contended_seconds=0.3, contended_workers=[2, 8],
                  contended_procs=4, wd_timeout_ms=300, wd_periods=3, wd_sizes=[100, 1000],
                  wd_big=None, wait_threads=100, aio_wait_tasks=200,
                  gil_seconds=0.2, gil_waiters=[1, 8], mem_objects=2000, mem_cycles=4000,
                  mem_threads=4, openresty_seconds=1, openresty_handoffs=5, openresty_rounds=1,
                  cluster_holds=1000),
}
LUA_INTERPRETERS = ["lua5.4", "luajit"]
STEP_TIMEOUT = 600


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), "")
    except OSError:
        pass
    os_name = ""
    try:
        with open("/etc/os-release") as f:
            os_name = next((line.split("=", 1)[1].strip().strip('"') for line in f
                            if line.startswith("PRETTY_NAME=")), "")
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lua = {i: sh(i, "-v").split(" -- ")[0].split("  Copyright")[0] if shutil.which(i) else None
           for i in LUA_INTERPRETERS}
    commit = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD")
    # the page and plots a previous run wrote do not count as changes to what is measured
    if sh("git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", ".",
          ":!docs/benchmarks.md", ":!docs/img"):
        commit += " (with uncommitted changes)"
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_gib, 1),
        "kernel": platform.release(), "os": os_name,
        "redis": sh("redis-server", "--version"),
        "redis_benchmark": sh("redis-benchmark", "--version"),
        "hiredis": sh("pkg-config", "--modversion", "hiredis"),
        "cc": sh("cc", "--version").split("\n")[0],
        "python": platform.python_version(), "lua": lua,
        "versions": {name: version_of(IMPLS[name].dist) for name in ["redlease"] + PEERS},
        "matplotlib": version_of("matplotlib"), "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_start": os.getloadavg()[0],
    }


def last_json(text):
    """The command's JSON: its whole output, or else its last line that is a JSON object."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON in the output: " + text[-200:])


class Harness:
    def __init__(self, out, url, port, size, bins):
        self.out, self.url, self.port, self.p, self.bins = out, url, port, SIZES[size], bins
        self.size = size
        self.steps = {}
        for sub in ("raw", "logs"):
            os.makedirs(os.path.join(out, sub), exist_ok=True)

    def flush(self):
        subprocess.run(["redis-cli", "-p", str(self.port), "FLUSHALL"], capture_output=True,
                       timeout=30)

    def run(self, name, measure, cmd, env=None, parse=last_json, setup=None):
        """Runs one measurement command; its JSON goes into the results under `name`."""
        cmd = [str(c) for c in cmd]
        self.flush()
        if setup:
            setup()
        print(f"bench: {name} ...", end=" ", flush=True)
        start = time.monotonic()
        log = os.path.join(self.out, "logs", name + ".log")
        step = {"measure": measure, "command": " ".join(shlex.quote(c) for c in cmd)}
        try:
            with open(log, "w") as err:
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                      timeout=STEP_TIMEOUT, env=env)
            if proc.returncode != 0:
                raise RuntimeError(f"exit {proc.returncode}: " + open(log).read()[-400:])
            data = parse(proc.stdout)
            step.update(ok=True, data=data)
            with open(os.path.join(self.out, "raw", name + ".json"), "w") as f:
                json.dump(data, f, indent=1)
        except Exception as e:  # recorded; the page says the row failed
            step.update(ok=False, error=str(e).strip()[-600:])
        step["seconds"] = round(time.monotonic() - start, 2)
        print(("ok" if step["ok"] else "FAILED: " + step["error"].splitlines()[-1][:200])
              + f" ({step['seconds']} s)", flush=True)
        self.steps[name] = step
        return step

    def py(self, script, *args):
        return [sys.executable, os.path.join(HERE, "python", script), self.url, *map(str, args)]

    def external(self, prefix, measure, **params):
        """A library measured by an outside command (Redisson: $BENCH_REDISSON)."""
        args = []
        for k, v in params.items():
            args += ["--" + k.replace("_", "-"), ",".join(map(str, v)) if isinstance(v, list)
                     else str(v)]
        # one step per run: contended runs once per worker count
        name = f"{measure}-redisson" + (f"-{params['workers']}" if "workers" in params else "")
        self.run(name, measure, shlex.split(prefix) + [measure, self.url] + args)

    def all(self, redisson):
        p, impls = self.p, [n for n in ["redlease"] + PEERS if available(n)]
        # 1: the C core and the Python rows each in one process, in short bursts paired with
        # the bare loop; Lua in processes of its own, each run between two runs of the limits
        self.run("core", "core", [self.bins["core"], self.url, p["cycles"], p["c_handoffs"],
                                  "json", p["cycle_bursts"]])
        self.run("cycles-python", "cycles",
                 self.py("cycles.py", ",".join(["redlease", "redlease-fixed"] + impls[1:]),
                         "--paired", p["cycle_bursts"], "--cycles", p["cycles"],
                         "--seconds", p["cycle_seconds"]),
                 env=dict(os.environ, BENCH_BARE=self.bins["bare"]))
        if redisson:
            self.external(redisson, "cycles", cycles=p["cycles"], seconds=p["cycle_seconds"])
        self.paired_limits()
        limits = self.steps.get("limits", {"ok": False})
        # 1, profile: one cycle's system calls, task switches and CPU (bench/profile_steps.py)
        profile_steps.profile(self, self.size)
        # 1, instructions: each C operation's instructions under callgrind (bench/callgrind.py)
        self.run("callgrind", "callgrind",
                 [sys.executable, os.path.join(HERE, "callgrind.py"), "measure", self.url,
                  "--work", os.path.join(self.out, "callgrind")]
                 + (["--smoke"] if self.size == "smoke" else []))
        # 1b: 16 threads, and the server's ceiling; the C core with a pool of 4 connections and
        # with one connection per thread (the core's default pool, as the Python rows, is 16)
        for pool in (4, p["parallel_threads"]):
            self.run(f"parallel-c-pool{pool}", "parallel",
                     [self.bins["parallel"], self.url, p["parallel_threads"],
                      p["parallel_seconds"], pool, -1])
        for impl in impls[:1] + ["redlease-fixed"] + impls[1:]:
            self.run(f"parallel-{impl}", "parallel",
                     self.py("cycles.py", impl, "--threads", p["parallel_threads"],
                             "--seconds", p["parallel_seconds"]))
        if redisson:
            self.external(redisson, "parallel", threads=p["parallel_threads"],
                          seconds=p["parallel_seconds"])
        if limits["ok"]:
            self.ceiling(limits["data"])
        # 2: hand-off latency between processes
        # (redlease's row also measures the wire around its rounds: PING and acquire round trips)
        for impl in impls:
            self.run(f"handoff-{impl}", "handoff",
                     self.py("handoff.py", impl, "--rounds", p["handoffs"],
                             *(["--wire"] if impl == "redlease" else [])),
                     env=dict(os.environ, BENCH_BARE=self.bins["bare"]))
        if redisson:
            self.external(redisson, "handoff", rounds=p["handoffs"])
        # 2b: semaphores (bench/family_steps.py)
        family_steps.semaphore(self, redisson)
        # 3: contended throughput and fairness; redlease also with its hand-over grace off
        for workers in p["contended_workers"]:
            for impl in impls[:1] + ["redlease-no-grace"] + impls[1:]:
                self.run(f"contended-{impl}-{workers}", "contended",
                         self.py("contended.py", impl, "--workers", workers, "--procs",
                                 p["contended_procs"], "--seconds", p["contended_seconds"]))
            if redisson:
                self.external(redisson, "contended", workers=workers, procs=p["contended_procs"],
                              seconds=p["contended_seconds"])
        # 4 (and 6, core): watchdog scale
        self.run("watchdog", "watchdog", [self.bins["watchdog"], self.url, p["wd_timeout_ms"],
                                          p["wd_periods"], *p["wd_sizes"]])
        # 4, a million holds: at the default watchdog timeout (a round of a million must fit its
        # period, which the short timeout above does not give it); not in the smoke run
        if p["wd_big"]:
            self.run("watchdog-big", "watchdog",
                     [self.bins["watchdog"], self.url, p["wd_big_timeout_ms"],
                      p["wd_big_periods"], p["wd_big"]])
        if redisson:
            self.external(redisson, "watchdog", timeout_ms=p["wd_timeout_ms"],
                          periods=p["wd_periods"], sizes=p["wd_sizes"])
        # 4c: many threads waiting (the blocking API; asyncio's waiting tasks are in measure 8)
        self.run("wait-threads", "wait-threads",
                 self.py("waiting_threads.py", "--threads", p["wait_threads"],
                         "--seconds", 5 if p["wd_big"] else 0.3))
        # 4b: Redis Cluster, 3 masters against one node (bench/cluster_steps.py)
        cluster_steps.cluster(self)
        # 5: GIL
        for impl in impls:
            self.run(f"gil-{impl}", "gil", self.py("gil.py", impl, "--waiters",
                                                   ",".join(map(str, p["gil_waiters"])),
                                                   "--seconds", p["gil_seconds"]))
        # 6: Python memory
        self.run("memory-python", "memory-python",
                 self.py("memory.py", "--objects", p["mem_objects"], "--cycles", p["mem_cycles"],
                         "--threads", p["mem_threads"]))
        # 8: asyncio locks (bench/asyncio_steps.py)
        asyncio_steps.asyncio_locks(self)
        # 7: OpenResty (bench/openresty): requests/s with wrk, hand-off in nginx
        self.run("openresty", "openresty",
                 [sys.executable, os.path.join(HERE, "openresty", "run.py"), self.url,
                  "--seconds", p["openresty_seconds"], "--handoffs", p["openresty_handoffs"],
                  "--rounds", p["openresty_rounds"]])
        # 7, deployments: the per-request rows against Sentinel and a 3-master Cluster, which the
        # step starts itself (the smoke run skips their warm-up: its time)
        self.run("openresty-deployments", "openresty-deployments",
                 [sys.executable, os.path.join(HERE, "openresty", "deployments.py"),
                  "--seconds", p["openresty_seconds"]]
                 + (["--no-warm-up"] if self.size == "smoke" else []))

    def paired_limits(self):
        """The limits on their own (bench_limits) and the Lua rows, which run in processes of
        their own: in `cycle_bursts` rounds, each Lua run between two runs of bench_limits, so
        that each Lua row gets ratios to the limits measured just before and after it. Recorded
        as the steps "limits" (medians of every bench_limits run) and "lua-<interpreter>"."""
        p, n = self.p, max(1, self.p["cycles"] // self.p["cycle_bursts"])
        luas = []
        for lua in LUA_INTERPRETERS:
            tree = os.path.join(ROOT, "build", "lua-" + lua)
            if shutil.which(lua) and os.path.isdir(tree):
                ver = sh(lua, "-e", 'io.write((_VERSION:gsub("^Lua ", "")))')
                env = dict(os.environ,
                           LUA_PATH=f"{tree}/share/lua/{ver}/?.lua;{tree}/share/lua/{ver}/?/init.lua;;",
                           LUA_CPATH=f"{tree}/lib/lua/{ver}/?.so;;")
                luas.append((lua, [lua, os.path.join(HERE, "lua", "cycles.lua"), self.url, str(n),
                                   "json"], env))
        limit_cmd = [self.bins["limits"], self.url, str(n)]
        print(f"bench: limits and Lua, {p['cycle_bursts']} paired rounds ...", end=" ", flush=True)
        start = time.monotonic()
        limits, runs = [], {lua: [] for lua, _, _ in luas}
        try:
            def one(cmd, env=None):
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT,
                                     env=env)
                if out.returncode != 0:
                    raise RuntimeError(f"{cmd[0]}: exit {out.returncode}: {out.stderr[-300:]}")
                return last_json(out.stdout)

            def rates(d):
                return {r["impl"]: r["cycles_per_s"] for r in d["rows"]}
            self.flush()
            limits.append(one(limit_cmd))
            for _ in range(p["cycle_bursts"]):
                for lua, cmd, env in luas:
                    d = one(cmd, env)
                    limits.append(one(limit_cmd))
                    before, after = rates(limits[-2]), rates(limits[-1])
                    bare = (before["bare-scripts"] + after["bare-scripts"]) / 2
                    runs[lua].append((d, bare, before["ping"]))
                if not luas:
                    limits.append(one(limit_cmd))
        except Exception as e:
            self.steps["limits"] = {"measure": "limits", "ok": False, "error": str(e)[-600:],
                                    "seconds": round(time.monotonic() - start, 2)}
            print("FAILED: " + str(e)[-200:], flush=True)
            return
        med = statistics.median
        data = dict(limits[-1], cycles=n, runs=len(limits))
        for row in data["rows"]:
            row["rounds_cycles_per_s"] = [rates(d)[row["impl"]] for d in limits]
            row["cycles_per_s"] = med(row["rounds_cycles_per_s"])
        self.steps["limits"] = {"measure": "limits", "ok": True, "data": data,
                                "command": " ".join(limit_cmd), "seconds": 0}
        for lua, cmd, _ in luas:
            first = runs[lua][0][0]
            out = dict(first, bursts=len(runs[lua]))
            for row in out["rows"]:
                rs = [rates(d)[row["impl"]] for d, _, _ in runs[lua]]
                row["rounds_cycles_per_s"] = rs
                row["cycles_per_s"] = med(rs)
                row["rounds_of_bare"] = [rates(d)[row["impl"]] / bare for d, bare, _ in runs[lua]]
                row["of_bare"] = med(row["rounds_of_bare"])
                row["of_ping"] = med(rates(d)[row["impl"]] / ping for d, _, ping in runs[lua])
            self.steps[f"lua-{lua}"] = {"measure": "lua", "ok": True, "data": out,
                                        "command": " ".join(cmd), "seconds": 0}
        elapsed = round(time.monotonic() - start, 2)
        self.steps["limits"]["seconds"] = elapsed
        print(f"ok ({elapsed} s)", flush=True)

    def ceiling(self, limits):
        """EVALSHA at 16 clients with redis-benchmark: redlease's acquire script on fresh keys,
        and its release script on a key held with a huge count (it decrements, renews and sets
        the latch: five Redis calls, where a full release does six)."""
        owner = "8c6e5a7e-0000-4000-8000-000000000000:1"
        n, clients = self.p["rb_requests"], self.p["parallel_threads"]

        def bench(sha, *args):
            return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.port), "-c", str(clients),
                    "-n", str(n), "-r", "100000000", "--csv", "EVALSHA", sha, *args]

        def rps(text):
            rows = [line.split('","') for line in text.strip().splitlines() if line.startswith('"')]
            return {"requests_per_s": float(rows[-1][1].strip('"'))}

        a = self.run("ceiling-acquire", "ceiling",
                     bench(limits["acquire_sha"], "1", "bench:rb:__rand_int__", "30000", owner),
                     parse=rps)
        def hold():
            subprocess.run(["redis-cli", "-p", str(self.port), "HSET", "bench:rb:held", owner,
                            "1000000000000"], capture_output=True, timeout=30)

        r = self.run("ceiling-release", "ceiling",
                     bench(limits["release_sha"], "3", "bench:rb:held",
                           "redisson_lock__channel:{bench:rb:held}",
                           "redisson_unlock_latch:{bench:rb:held}:__rand_int__", "0", "30000",
                           owner, "20000", "publish"), parse=rps, setup=hold)
        if a["ok"] and r["ok"] and r["data"]["requests_per_s"] > 0:
            ra, rr = a["data"]["requests_per_s"], r["data"]["requests_per_s"]
            self.steps["ceiling"] = {"measure": "ceiling", "ok": True, "seconds": 0,
                                     "data": {"clients": clients, "requests": n,
                                              "acquire_per_s": ra, "release_per_s": rr,
                                              "cycles_per_s": 1 / (1 / ra + 1 / rr)}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--page", help="write the results page here (default: OUT/benchmarks.md)")
    ap.add_argument("--img", help="plots go here (default: OUT/img)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes; counts sane steps")
    ap.add_argument("--results", help="smoke: where the 'N passed, N failed' transcript goes")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build"),
                    help="where the bench_* programs are (bench/c)")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    page = os.path.abspath(a.page or os.path.join(out, "benchmarks.md"))
    img = os.path.abspath(a.img or os.path.join(out, "img"))
    docs = os.path.join(ROOT, "docs")
    if a.smoke and os.path.commonpath([page, docs]) == docs:
        sys.exit("run.py: --smoke never writes docs/")
    bins = {k: os.path.join(a.bin, "bench_" + k)
            for k in ("core", "limits", "watchdog", "parallel")}
    bins["bare"] = os.path.join(a.bin, "bench_bare.so")
    bins["cycle_loop"] = os.path.join(a.bin, "cycle_loop")
    bins["before"] = os.path.join(a.bin, "bench-before", "cycle_loop")
    size = "smoke" if a.smoke else "full"
    redisson = os.environ.get("BENCH_REDISSON", "").strip()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    from redlease.testing import RedisServer
    started = time.monotonic()
    meta = machine()
    meta["command"] = "make bench-smoke" if a.smoke else "make bench"
    meta["argv"] = " ".join(shlex.quote(x) for x in [os.path.relpath(sys.executable, ROOT)]
                            + [os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:])
    with RedisServer() as server:
        print(f"bench: throwaway redis-server at {server.url} ({size} sizes)", flush=True)
        h = Harness(out, server.url, server.port, size, bins)
        h.all(redisson)
    meta["loadavg_end"] = os.getloadavg()[0]
    meta["seconds"] = round(time.monotonic() - started, 1)
    results = {"meta": meta, "size": size, "params": SIZES[size], "redisson": bool(redisson),
               "steps": h.steps}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)

    import report
    problems = report.write(results, page, img)
    print(f"bench: page {os.path.relpath(page, ROOT)}, plots in {os.path.relpath(img, ROOT)}, "
          f"{meta['seconds']} s")
    if a.smoke:
        import sanity
        return sanity.record(results, problems, page, img, a.results)
    failed = [n for n, s in h.steps.items() if not s["ok"]]
    if failed:
        print("bench: failed steps: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
