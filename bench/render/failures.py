"""The steps that failed in this run, with the last line of each one's error."""

from .fmt import table


def render(R):
    bad = [(n, s) for n, s in R.steps.items() if not s.get("ok")]
    rows = [[n, s.get("error", "").splitlines()[-1][:160].replace("|", "/") if s.get("error")
             else ""] for n, s in bad]
    return {"failures": bool(bad), "failures_table": table(["step", "error"], rows)}
