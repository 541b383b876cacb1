"""How figures are written on the page, and the plots' two colours."""

NOT_YET = "not measured yet"  # a library whose command was not run (BENCH_REDISSON= empty)
NA = "n/a"  # a figure the library's command could not measure (left out, or null)
COLOURS = {"redlease": "#c0392b", "peer": "#7f8c8d"}


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def n0(x):
    return "–" if x is None else f"{x:,.0f}"


def f2(x):
    return "–" if x is None else f"{x:.2f}"


def na(fmt, x):
    return NA if x is None else fmt(x)


def ms(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def one_of(xs):
    """[1, 8, 32] -> "1, 8 or 32"."""
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " or " + xs[-1]


def verdict(ok):
    return "met" if ok else "not met"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
