"""Uncontended lock+unlock per request: redlease against the polling SET NX lock, in the same
nginx, alternating, repeated; the ratio is taken per pair so that a loaded machine weighs on
both alike. With --profile, LuaJIT's sampling profiler (jit.p) runs in the worker during one
wrk run of each and its report is printed.

    python bench/openresty/per_request.py [--seconds 3] [--repeats 3] [--profile]
                                          [--commandstats] [--mux]
                                          [--instructions N [--keep DIR]]

Each repeat also runs the bare format (bench_app.lua: redlease's two scripts sent the polling
lock's way, no client around them) and, with --mux, the bare format on one pipelined connection
per worker (bench_mux.lua, an experiment). Prints the pairs and their ratios (redlease / polling,
bare format / polling), per number of workers, and the CPU time
each request cost the nginx workers and redis-server (from /proc: what other processes take from
the machine does not count in it). With --commandstats, one wrk run of each with Redis's INFO
commandstats around it: which commands each request made Redis run, and the µs of execution
each took (Redis's own count: the reading, parsing and writing around them are not in it).

With --instructions N, only this: nginx runs as one process under valgrind's callgrind, and N
sequential requests of each kind (one HTTP connection, so one lock name) are counted in
instructions of that process per request, alternating twice. Instructions do not change with
the machine's load as CPU time does: the measure to compare two versions of the backend on a
busy machine. (Timers fire by wall-clock time and valgrind slows nginx down about 50 times: the
0.1 s latch timer runs far more often per request than at full speed, a few thousand
instructions of noise; and sequential requests carry one latch DEL per request, batched ones
far fewer.)"""

import argparse
import glob
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "openresty"))
sys.path.insert(0, HERE)

from nginx import Nginx  # noqa: E402

from redlease.testing import RedisServer  # noqa: E402
from run import HTTP, LOCATIONS, cpu_seconds, wrk  # noqa: E402

# --mux: the bare format on one pipelined connection per worker (bench_mux.lua, an experiment)
MUX_HTTP = HTTP.replace('require("bench_app").init("{redis}")',
                        'require("bench_app").init("{redis}") require("bench_mux").init("{redis}")')
MUX = """
    location = /mux { content_by_lua_block {
      require("bench_mux").cycle("rps:" .. ngx.var.connection) } }
"""

PROFILE = """
    location = /prof_start { content_by_lua_block {
      require("jit.p").start(ngx.var.arg_mode, ngx.var.arg_out) ngx.say("ok") } }
    location = /prof_stop { content_by_lua_block { require("jit.p").stop() ngx.say("ok") } }
"""


def measured(ng, server, path, seconds, connections):
    """-> requests/s, worker CPU µs per request, redis-server CPU µs per request"""
    workers = ng.worker_pids()
    w0, r0 = cpu_seconds(workers), cpu_seconds([server.process.pid])
    rps = wrk(ng.port, path, seconds, connections)
    w1, r1 = cpu_seconds(workers), cpu_seconds([server.process.pid])
    n = rps * seconds
    return rps, (w1 - w0) / n * 1e6, (r1 - r0) / n * 1e6


def profile(ng, path, seconds, connections, mode):
    out = tempfile.mktemp(prefix="redlease-jitp-")
    ng.get(f"/prof_start?mode={mode}&out={out}")
    wrk(ng.port, path, seconds, connections)
    ng.get("/prof_stop")
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    return text


def redis_cli(server, *args):
    return subprocess.run(["redis-cli", "-p", str(server.port), *args], capture_output=True,
                          text=True, check=True).stdout


def commandstats(ng, server, path, seconds, connections):
    """-> lines: per command, calls and execution µs per request, and µs per call"""
    redis_cli(server, "CONFIG", "RESETSTAT")
    rps = wrk(ng.port, path, seconds, connections)
    text = redis_cli(server, "INFO", "commandstats")
    n = rps * seconds
    out = []
    for m in re.finditer(r"cmdstat_(\S+):calls=(\d+),usec=(\d+),usec_per_call=([0-9.]+)", text):
        name, calls, usec, per_call = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if name in ("config|resetstat", "info"):
            continue
        out.append(f"  {name:<12} {calls / n:6.3f} calls/request  {usec / n:6.2f} µs/request  "
                   f"{per_call} µs/call")
    return out


def sequential(port, path, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for _ in range(n):
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: {r.status} {body!r}")
    finally:
        c.close()


def instructions(server, n, keep=None):
    """nginx (master_process off) under callgrind: instructions per request, twice each. keep:
    a folder where each run's callgrind dump stays (callgrind_annotate reads it)."""
    ng = Nginx(server.url, http_block=HTTP, server_block=LOCATIONS, workers=1,
               log_level="warn", lua_dir=HERE)
    conf = os.path.join(ng.dir, "conf", "nginx.conf")
    with open(conf) as f:
        text = f.read().replace("master_process on;", "master_process off;")
    with open(conf, "w") as f:
        f.write(text)
    out = os.path.join(ng.dir, "callgrind.out")
    # (kept dumps name every function in full: each is read alone by callgrind_annotate)
    names = ["--compress-strings=no", "--compress-pos=no"] if keep else []
    p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *names,
                          "nginx",
                          "-p", ng.dir, "-c", "conf/nginx.conf", "-e", "logs/error.log"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                sequential(ng.port, "/ping", 1)
                break
            except OSError:
                time.sleep(0.2)
        runs = 0
        for path in ("/redlease", "/polling", "/bare", "/redlease", "/polling", "/bare"):
            sequential(ng.port, path, 300)  # warm: JIT, pools, caches
            subprocess.run(["callgrind_control", "-z", str(p.pid)], capture_output=True,
                           check=True)
            sequential(ng.port, path, n)
            before = set(glob.glob(out + "*"))
            subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True,
                           check=True)
            dump = sorted(set(glob.glob(out + "*")) - before, key=os.path.getmtime)[-1]
            with open(dump) as f:
                total = [int(line.split()[1]) for line in f
                         if line.startswith(("summary:", "totals:"))][-1]
            if keep:
                os.makedirs(keep, exist_ok=True)
                shutil.move(dump, os.path.join(keep, f"callgrind.{runs}{path.replace('/', '.')}"))
                runs += 1
            else:
                os.unlink(dump)
            print(f"{path}: {total / n:,.0f} instructions per request (nginx)", flush=True)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(ng.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--mode", default="Fi1")
    ap.add_argument("--commandstats", action="store_true")
    ap.add_argument("--mux", action="store_true",
                    help="also the bare format multiplexed per worker (bench_mux.lua)")
    ap.add_argument("--instructions", type=int, default=0, metavar="N")
    ap.add_argument("--keep", metavar="DIR", help="with --instructions: keep the callgrind dumps")
    a = ap.parse_args()
    with RedisServer() as server:
        if a.instructions:
            return instructions(server, a.instructions, a.keep)
        for workers in (1, 2):
            ng = Nginx(server.url, http_block=MUX_HTTP if a.mux else HTTP,
                       server_block=LOCATIONS + PROFILE + (MUX if a.mux else ""),
                       workers=workers, log_level="warn", lua_dir=HERE).start()
            try:
                for path in ("/redlease", "/polling", "/bare") + (("/mux",) if a.mux else ()):
                    wrk(ng.port, path, 1, a.connections)  # warm-up: pools, JIT
                if a.profile and workers == 1:
                    for path in ("/redlease", "/polling"):
                        print(f"--- jit.p {a.mode} {path} (1 worker)")
                        print(profile(ng, path, a.seconds, a.connections, a.mode))
                if a.commandstats:
                    for path in ("/redlease", "/polling", "/bare"):
                        print(f"--- INFO commandstats {path} ({workers} worker(s))")
                        print("\n".join(commandstats(ng, server, path, a.seconds,
                                                     a.connections)), flush=True)
                ratios = []
                for _ in range(a.repeats):
                    r, rw, rr = measured(ng, server, "/redlease", a.seconds, a.connections)
                    p, pw, pr = measured(ng, server, "/polling", a.seconds, a.connections)
                    b, bw, br = measured(ng, server, "/bare", a.seconds, a.connections)
                    ratios.append(r / p)
                    print(f"workers={workers} redlease={r:.0f}/s (worker {rw:.0f} µs, redis "
                          f"{rr:.0f} µs) polling={p:.0f}/s (worker {pw:.0f} µs, redis {pr:.0f} "
                          f"µs) bare format={b:.0f}/s (worker {bw:.0f} µs, redis {br:.0f} µs) "
                          f"ratio={r / p:.3f} bare/polling={b / p:.3f}", flush=True)
                    if a.mux:
                        m, mw, mr = measured(ng, server, "/mux", a.seconds, a.connections)
                        print(f"workers={workers} multiplexed bare format={m:.0f}/s (worker "
                              f"{mw:.0f} µs, redis {mr:.0f} µs) mux/polling={m / p:.3f}",
                              flush=True)
                print(f"workers={workers} ratios {' '.join(f'{x:.3f}' for x in ratios)}")
            finally:
                ng.close()


if __name__ == "__main__":
    main()
