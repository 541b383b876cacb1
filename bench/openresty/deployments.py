"""The OpenResty per-request rows against the other deployments redlease's OpenResty backend
takes: a Sentinel deployment (a master, a replica and three sentinels; tests/sentinel's kit) and
a Redis Cluster of 3 masters without replicas (redlease.testing.RedisCluster), each started here
on free loopback ports and stopped by pid. Per deployment and per number of nginx workers (1, 2):
wrk's requests/s through one redlease lock cycle per request (bench_app.lua's /redlease: acquire
and release of a name of the connection's own, 30 s lease) and the CPU µs the workers spent per
request; with Sentinel also the polling SET NX lock (/polling) at the master's address (it does
not ask the sentinels: the address is fixed when nginx starts). The one-Redis rows are
bench/openresty/run.py's.

    python bench/openresty/deployments.py [--seconds 5] [--connections 32] [--no-warm-up]

Prints one JSON object: {"measure": "openresty-deployments", "rows": [...]}."""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests")
sys.path[:0] = [HERE, TESTS, os.path.join(TESTS, "sentinel"), os.path.join(TESTS, "openresty")]

from deployment import Deployment  # noqa: E402  (tests/sentinel's kit)
from nginx import Nginx  # noqa: E402  (the suite's throwaway nginx)

from redlease.testing import RedisCluster  # noqa: E402
from run import LOCATIONS, measured, wrk  # noqa: E402

HTTP = """
  init_worker_by_lua_block { require("bench_app").init("{redis}", "%s") }
"""


def rows_of(deployment, url, polling_url, seconds, connections, warm_up):
    """The rows of one deployment: redlease (and the polling lock when `polling_url`)."""
    paths = [("redlease", "/redlease")] + ([("polling", "/polling")] if polling_url else [])
    rows = []
    for workers in (1, 2):
        ng = Nginx(url, http_block=HTTP % (polling_url or ""), server_block=LOCATIONS,
                   workers=workers, log_level="warn", lua_dir=HERE).start()
        try:
            for _, path in paths if warm_up else ():
                wrk(ng.port, path, 1, connections)  # warm-up: pools, JIT, the master's address
            for impl, path in paths:
                rows.append({"kind": "rps", "impl": impl, "deployment": deployment,
                             "workers": workers, "connections": connections, "seconds": seconds,
                             **measured(ng, path, seconds, connections)})
        finally:
            ng.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                    help="no 1 s wrk run before the measured ones (make bench-smoke: its time)")
    a = ap.parse_args()
    seconds = max(1, int(round(a.seconds)))
    rows = []
    d = Deployment()
    try:
        rows += rows_of("sentinel", d.url, d.master_server().url, seconds, a.connections,
                        a.warm_up)
    finally:
        d.close()
    with RedisCluster(masters=3, replicas=0) as cluster:
        rows += rows_of("cluster", cluster.url, None, seconds, a.connections, a.warm_up)
    print(json.dumps({"measure": "openresty-deployments", "rows": rows}))


if __name__ == "__main__":
    main()
