"""The checkers: overlapping holds (reported or not), fenced writes, availability.

A hold is one owner's successful acquire up to the start of its release: the time in which the
owner believes it holds the lock and may act on it. It begins when the acquire returns (the
owner cannot act before) and ends when the release starts (or when the run ended). Two holds of
one lock by different owners overlap when each began before the other ended. The overlap is
reported when the earlier holder was told (an event whose KINDS entry `tells`) no later than the
later holder began, or was in doubt when it began (told "in_doubt" and not confirmed "held"
since); by how much is the margin.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from history import Event, of, tells

# Faults that break an assumption of redlease's promise, and when an overlap is theirs (one
# entry each). The promise assumes pauses
# shorter than the lease minus a margin; a process stopped past its lease breaks it either way:
# as the earlier holder (stopped during its hold, it cannot be told in time), or as the later
# one (stopped in its acquire after Redis granted it, it reads the grant when its lease has run
# out and another owner may hold the lock).
OUTSIDE_PROMISE = {
    "pause-holder": lambda f, a, b: f["start"] < b.start and (
        (a.proc in f["target"] and f["end"] > a.start)
        or (b.proc in f["target"] and f["end"] > b.asked)),
    # It assumes clocks that do not jump on the Redis host: a jump forward ends at once every
    # lease it passes (Redis expires keys by its wall clock), so the earlier hold, running when
    # the clock jumped, is gone before its holder can learn it (at its next renewal).
    "clock-jump": lambda f, a, b: a.start < f["start"] <= b.start and a.end > f["start"],
}

@dataclass
class Hold:
    proc: str
    owner: str
    lock: str
    asked: int          # the acquire call's start
    start: int          # the acquire call's end: the owner holds from here
    end: int            # the release call's start
    token: Optional[int] = None
    told: Optional[int] = None
    told_by: str = ""
    # on_state changes in time order: (t, True) for "in_doubt", (t, False) for "held"
    doubts: List[Tuple[int, bool]] = field(default_factory=list)

    def tell(self, t: int, by: str) -> None:
        if self.told is None or t < self.told:
            self.told, self.told_by = t, by

    def doubted_at(self, t: int) -> Optional[int]:
        """When the doubt that still stood at time t began (None if the hold was not in doubt
        then): the holder was told its hold may be gone, and not told since that it is not."""
        since = None
        for when, doubting in self.doubts:
            if when > t:
                break
            if doubting and since is None:
                since = when
            elif not doubting:
                since = None
        return since

    def told_by_time(self, t: int) -> Optional[Tuple[int, str]]:
        """The earliest tell that still stood at time t, and what told it."""
        found = []
        if self.told is not None and self.told <= t:
            found.append((self.told, self.told_by))
        doubt = self.doubted_at(t)
        if doubt is not None:
            found.append((doubt, "state:in_doubt"))
        return min(found) if found else None


@dataclass
class Overlap:
    lock: str
    earlier: Hold
    later: Hold
    reported: bool
    margin_ns: Optional[int]    # later.start - earlier.told, when reported
    outside_promise: str = ""   # the fault that broke an assumption, if any
    told_by: str = ""           # what told the earlier holder in time, when reported

    @property
    def length_ns(self) -> int:
        return min(self.earlier.end, self.later.end) - self.later.start


def holds(events: List[Event], run_end: int) -> List[Hold]:
    """Every hold, told-times attached from the events that tell (KINDS)."""
    open_: Dict[Tuple[str, str, str], Hold] = {}
    done: List[Hold] = []
    for e in sorted((e for e in events if e["kind"] in ("acquire", "release")),
                    key=lambda e: (e["start"], e["kind"] != "release")):
        k = (e["proc"], e["owner"], e["lock"])
        if e["kind"] == "acquire" and e["ok"]:
            if k not in open_:  # reentrant acquires extend nothing
                open_[k] = Hold(e["proc"], e["owner"], e["lock"], e["start"], e["end"], run_end,
                                e.get("token"))
        elif e["kind"] == "release" and k in open_:
            h = open_.pop(k)
            h.end = e["start"]
            done.append(h)
    done.extend(open_.values())
    by_proc_lock: Dict[Tuple[str, str], List[Hold]] = {}
    for h in done:
        by_proc_lock.setdefault((h.proc, h.lock), []).append(h)
    for e in sorted(events, key=lambda e: e.get("t", 0)):
        if e["kind"] == "state" and e["state"] in ("in_doubt", "held"):
            h = _holder_told(by_proc_lock.get((e["proc"], e["lock"]), []), e, e["t"])
            if h is not None:
                h.doubts.append((e["t"], e["state"] == "in_doubt"))
            continue
        t = tells(e) if e["kind"] != "fault" else None
        if t is None:
            continue
        h = _holder_told(by_proc_lock.get((e["proc"], e["lock"]), []), e, t)
        if h is not None:
            h.tell(t, e["kind"] + ":" + str(e.get("reason", e.get("state", ""))))
    return done


def _holder_told(candidates: List[Hold], e: Event, t: int) -> Optional[Hold]:
    """The hold an event tells: the owner's own when the event names it, else the process's
    hold of that lock that began last before the event (on_lost names only the lock)."""
    if "owner" in e:
        mine = [h for h in candidates if h.owner == e["owner"] and h.start <= t]
    else:
        mine = [h for h in candidates if h.start <= t]
    return max(mine, key=lambda h: h.start) if mine else None


def overlaps(hs: List[Hold], faults: List[Event]) -> List[Overlap]:
    found: List[Overlap] = []
    by_lock: Dict[str, List[Hold]] = {}
    for h in hs:
        by_lock.setdefault(h.lock, []).append(h)
    for lock, group in by_lock.items():
        group.sort(key=lambda h: h.start)
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b.start >= a.end:
                    break
                if (a.proc, a.owner) == (b.proc, b.owner):
                    continue
                told = a.told_by_time(b.start)
                o = Overlap(lock, a, b, told is not None,
                            b.start - told[0] if told is not None else None)
                o.told_by = told[1] if told is not None else ""
                o.outside_promise = _outside_promise(a, b, faults)
                found.append(o)
    return found


def _outside_promise(a: Hold, b: Hold, faults: List[Event]) -> str:
    for f in faults:
        if f["fault"] in OUTSIDE_PROMISE and OUTSIDE_PROMISE[f["fault"]](f, a, b):
            return f["fault"]
    return ""


@dataclass
class Fenced:
    """What the database says of one row: its final value and its accepted writes in commit
    order (token, value written)."""
    mode: str
    final: int
    accepted: List[Tuple[Optional[int], int]]
    rejected: int = 0
    lost_increments: int = 0
    token_order_errors: List[str] = field(default_factory=list)


def check_fenced(f: Fenced) -> Fenced:
    """No increment lost: every accepted write added one, so the final value must be their
    count. Fenced modes: accepted tokens strictly increase in commit order."""
    f.lost_increments = len(f.accepted) - f.final
    if f.mode != "unfenced":
        last = None
        for token, _ in f.accepted:
            if last is not None and (token is None or token <= last):
                f.token_order_errors.append(f"token {token} accepted after {last}")
            last = token
    return f


@dataclass
class Availability:
    during_ok: int = 0
    during: int = 0
    after_ok: int = 0
    after: int = 0
    recoveries_ns: List[int] = field(default_factory=list)
    stuck: List[str] = field(default_factory=list)
    healed_to_usable_ns: Dict[str, int] = field(default_factory=dict)


def availability(events: List[Event], faults: List[Event], run_end: int,
                 lease_ns: int, margin_ns: int) -> Availability:
    """Acquires that began during a fault or after it (until the next), the time from each
    fault's end until every lock was acquired again, and locks still not acquirable one lease
    (plus a margin) after the last fault healed."""
    a = Availability()
    acquires = sorted(of(events, "acquire"), key=lambda e: e["start"])
    locks = sorted({e["lock"] for e in acquires})
    fs = sorted(faults, key=lambda f: f["start"])
    for i, f in enumerate(fs):
        after_end = fs[i + 1]["start"] if i + 1 < len(fs) else run_end
        for e in acquires:
            if f["start"] <= e["start"] <= f["end"]:
                a.during += 1
                a.during_ok += e["ok"]
            elif f["end"] < e["start"] <= after_end:
                a.after += 1
                a.after_ok += e["ok"]
        worst = 0
        for lock in locks:
            firsts = [e["end"] for e in acquires if e["ok"] and e["lock"] == lock
                      and e["end"] >= f["end"]]
            worst = max(worst, (min(firsts) - f["end"]) if firsts else run_end - f["end"])
        a.recoveries_ns.append(worst)
    healed = max((f["end"] for f in fs), default=min((e["start"] for e in acquires), default=0))
    for lock in locks:
        firsts = [e["end"] for e in acquires if e["ok"] and e["lock"] == lock
                  and e["end"] >= healed]
        wait = (min(firsts) - healed) if firsts else None
        if wait is not None:
            a.healed_to_usable_ns[lock] = wait
        if wait is None or wait > lease_ns + margin_ns:
            a.stuck.append(lock)
    return a


def languages(events: List[Event]) -> Dict[str, str]:
    """Each client process's language, from its hello (histories without one: python)."""
    return {e["proc"]: e.get("lang", "python") for e in of(events, "hello")}


def by_language(events: List[Event], ovs: List[Overlap]) -> Tuple[Dict[str, dict],
                                                                   Dict[str, dict]]:
    """Events counted per client language (processes, acquires, acquisitions and per lock,
    releases, losses told, database writes and those accepted), and overlaps per pair of
    languages, "earlier>later" (python>lua: a Python holder overlapped by a Lua one), reported
    or not."""
    lang = languages(events)
    per: Dict[str, dict] = {}
    for proc, name in sorted(lang.items()):
        per.setdefault(name, {"procs": [], "attempts": 0, "acquisitions": 0, "releases": 0,
                              "lost": 0, "writes": 0, "accepted": 0,
                              "locks": {}})["procs"].append(proc)
    for e in events:
        if e["kind"] in ("hello", "fault") or e["proc"] not in lang:
            continue
        c = per[lang[e["proc"]]]
        if e["kind"] == "acquire":
            c["attempts"] += 1
            c["acquisitions"] += bool(e["ok"])
            if e["ok"]:
                c["locks"][e["lock"]] = c["locks"].get(e["lock"], 0) + 1
        elif e["kind"] == "release":
            c["releases"] += 1
        elif e["kind"] == "lost":
            c["lost"] += 1
        elif e["kind"] == "write":
            c["writes"] += 1
            c["accepted"] += bool(e["accepted"])
    pairs: Dict[str, dict] = {}
    for o in ovs:
        key = f"{lang.get(o.earlier.proc, '?')}>{lang.get(o.later.proc, '?')}"
        c = pairs.setdefault(key, {"overlaps": 0, "reported": 0, "unreported": 0,
                                   "outside_promise": 0})
        c["overlaps"] += 1
        if o.reported:
            c["reported"] += 1
        elif o.outside_promise:
            c["outside_promise"] += 1
        else:
            c["unreported"] += 1
    return per, dict(sorted(pairs.items()))
