"""Measure 4b: redlease on a local Redis Cluster (3 masters) against one node: 16-thread cycles,
and the watchdog's round over many holds, with each node's own time per round."""

from .fmt import f2, ms, n0, table


def render(R):
    rows = []
    for r in R.rows("cluster"):
        nodes = r["node_script_ms"]
        rows.append([r["target"], n0(r["cycles_per_s"]), f"{r['holds']:,}", ms(r["round_ms"]),
                     f2(r["round_trips_per_round"]), r["nodes"],
                     " / ".join(ms(x) for x in nodes), ms(max(nodes)), ms(sum(nodes)),
                     "yes" if r["lost"] else "0"])
    failed = R.failed("cluster")
    if not rows:
        rows.append(["not measured" + (": the step failed" if failed else ""), "", "", "", "",
                     "", "", "", "", ""])
    return {
        "cluster_holds": f"{R.p.get('cluster_holds', 0):,}",
        "cluster_table": table(["target", f"cycles/s ({R.p['parallel_threads']} threads)",
                                "holds", "round ms", "round trips / round", "nodes",
                                "each node's script ms / round", "slowest node", "sum of nodes",
                                "lost"], rows),
    }
