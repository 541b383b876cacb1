"""The page's head: when and where the run was made, and its sizes."""

from .fmt import NOT_YET, table
from .redisson import versions


def render(R):
    m, p, v = R.meta, R.p, R.meta["versions"]
    lua = ", ".join(x for x in m["lua"].values() if x) or "–"
    peers = (f"redis-py {v.get('redis-py')}, python-redis-lock {v.get('python-redis-lock')}, "
             f"pottery {v.get('pottery')}; Redisson: "
             + (versions(R) if R.r["redisson"] else NOT_YET))
    return {
        "command": m["command"], "date": m["date"], "minutes": f"{m['seconds'] / 60:.1f}",
        "cores": m["cores"], "load_start": f"{m['loadavg_start']:.2f}",
        "load_end": f"{m['loadavg_end']:.2f}",
        "run_table": table(["", ""], [
            ["command", f"`{m['command']}` (runs `{m['argv']}`)"],
            ["machine", f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, "
                        f"Linux {m['kernel']}"],
            ["Redis", m["redis"]],
            ["redlease", f"{v.get('redlease')} at {m['commit']}; hiredis {m['hiredis']}; "
                         f"{m['cc']}"],
            ["Python", f"{m['python']}; Lua: {lua}"],
            ["peers", peers],
            ["sizes", ", ".join(f"{k} {x}" for k, x in p.items())],
        ]),
    }
