"""The harness's step for Redis Cluster (bench/run.py calls it): measure 4b, 16-thread cycles and
the watchdog's rounds on a local 3-master cluster against one node, one command
(bench/python/cluster.py) printing both rows."""

import os
import sys


def cluster(h):
    p = h.p
    h.run("cluster", "cluster",
          [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python",
                                        "cluster.py"), h.url,
           "--parallel-bin", h.bins["parallel"], "--threads", p["parallel_threads"],
           "--seconds", p["parallel_seconds"], "--holds", p["cluster_holds"],
           "--wd-timeout-ms", p["wd_timeout_ms"], "--periods", p["wd_periods"]])
