"""The closing notes: the cause and fix of each goal the run missed (their text is in the
template, one section per goal: cause_1, cause_1b, ...)."""

from .goals import missed

EXPLAINED = ("1", "1b", "2", "3", "6")  # the goals whose causes the template explains


def render(R):
    miss = missed(R)
    out = {f"cause_{k}": k in miss for k in EXPLAINED}
    out["causes"] = any(k in miss for k in EXPLAINED)
    out["cycle_costs"] = "1" not in miss  # said in cause_1 when that is shown
    return out
