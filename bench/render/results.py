"""bench/run.py's results.json, read: steps by name, rows by measure and library."""


class Results:
    def __init__(self, results):
        self.r = results
        self.meta, self.p, self.steps = results["meta"], results["params"], results["steps"]

    def data(self, name):
        s = self.steps.get(name)
        return s["data"] if s and s.get("ok") else None

    def rows(self, measure):
        """Every row of every successful step of `measure`, in step order."""
        out = []
        for name, s in self.steps.items():
            if s.get("measure") == measure and s.get("ok"):
                for row in s["data"].get("rows", []):
                    out.append(dict(row, _step=name))
        return out

    def failed(self, measure):
        return [n for n, s in self.steps.items() if s.get("measure") == measure and not s["ok"]]

    def row(self, measure, impl, **match):
        for row in self.rows(measure):
            if row.get("impl") == impl and all(row.get(k) == v for k, v in match.items()):
                return row
        return None

    def has_redisson(self, measure, **match):
        return any(r["impl"] == "redisson" and all(r.get(k) == v for k, v in match.items())
                   for r in self.rows(measure))

    def limits(self):
        """Measure 1's two limits (cycles/s): two PING round trips, the bare script loop."""
        d = self.data("limits")
        if not d:
            return None, None
        by = {r["impl"]: r for r in d["rows"]}
        return by["ping"]["cycles_per_s"], by["bare-scripts"]["cycles_per_s"]
