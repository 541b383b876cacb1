"""Writes the benchmark page (Markdown) and its plots (PNG, matplotlib) from bench/run.py's
results.json: the text is bench/report_template.md, its values and plots come from
bench/render/ (one module per measure). `python bench/report.py build/bench/results.json --page P
--img D` redraws them without measuring again."""

import argparse
import json
import os

from render import (
    asyncio_locks,
    callgrind,
    cluster,
    contended,
    cycle_profile,
    cycles,
    failures,
    gil,
    goals,
    handoff,
    memory,
    notes,
    openresty,
    parallel,
    redisson,
    run_info,
    scale,
    semaphore,
    third_round,
    watchdog,
    wire_goals,
)
from render.results import Results
from render.template import fill

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_template.md")
PARTS = (run_info, goals, wire_goals, third_round, scale, cycles, cycle_profile, callgrind,
         parallel, handoff, semaphore, contended, watchdog, cluster, gil, memory, openresty,
         asyncio_locks, failures, notes, redisson)
PLOTTED = (cycles, parallel, handoff, contended, watchdog, scale, gil, memory)


def plots(R, img):
    """Draws every measure's plot into `img`; returns the names of those drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(img, exist_ok=True)
    made = set()
    for part in PLOTTED:
        fig = part.plot(R, plt)
        if fig is None:
            continue
        fig.tight_layout()
        fig.savefig(os.path.join(img, part.PLOT + ".png"), dpi=110)
        plt.close(fig)
        made.add(part.PLOT)
    return made


def write(results, page, img):
    """Writes the page and the plots; returns a list of problems (parts that could not be
    written), for the smoke run's count."""
    R = Results(results)
    problems = []
    try:
        made = plots(R, img)
    except Exception as e:  # the page is still written, and says so
        made, problems = set(), problems + [f"plots: {e!r}"]
    values = {"img": os.path.relpath(img, os.path.dirname(page))}
    values.update({f"plot_{part.PLOT}": part.PLOT in made for part in PLOTTED})
    for part in PARTS:
        values.update(part.render(R))
    with open(TEMPLATE) as f:
        text = fill(f.read(), values)
    os.makedirs(os.path.dirname(page), exist_ok=True)
    with open(page, "w") as f:
        f.write(text)
    return problems


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
