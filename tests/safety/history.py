"""The history of a run: JSON lines, one event each, every time a CLOCK_MONOTONIC reading in
nanoseconds (time.monotonic_ns(), one clock for every process of the machine).

KINDS is the one place that says what each kind of event carries and what it means to the
checker. A new kind is one entry: its fields, and `tells`, the time at which it told a holder
that its hold may be gone (None when it does not tell). `state` is the one kind that can also
take a tell back: "held" after "in_doubt" says the hold was confirmed again.
"""

import json
import os
import threading
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

Event = Dict


@dataclass(frozen=True)
class Kind:
    fields: Tuple[str, ...]
    tells: Callable[[Event], Optional[int]] = lambda e: None


KINDS: Dict[str, Kind] = {
    # a client process started: its redlease client id (as Redis stores it in lock fields) and
    # its language ("python", "lua", "openresty"; the checker counts events and overlaps per
    # language)
    "hello": Kind(("proc", "client_id", "pid")),
    # one acquire by one owner (a thread of a process): start and end of the call, ok or not,
    # the fencing token of a fenced lock, the error's name when it raised
    "acquire": Kind(("proc", "owner", "lock", "start", "end", "ok")),
    # one release: ok, or the loss reason of LockLostError (the holder is told at its end), or
    # the error's name
    "release": Kind(("proc", "owner", "lock", "start", "end", "ok"),
                    tells=lambda e: e["end"] if e.get("reason") else None),
    # the client's on_lost(name, reason) callback ran; from nginx (no such hook yet), an owner
    # saw lock:lost() during its hold, and the event names it (`owner`)
    "lost": Kind(("proc", "lock", "t", "reason"), tells=lambda e: e["t"]),
    # the client's on_state(name, state, why) callback ran ("in_doubt", "held", "lost"); from
    # nginx, an owner saw lock:in_doubt() turn during its hold (`owner` names it). "in_doubt"
    # tells (the hold may be gone: a careful holder stops acting on it), until a "held" of the
    # same hold takes that back (the checker's Hold.doubted_at)
    "state": Kind(("proc", "lock", "t", "state"),
                  tells=lambda e: e["t"] if e["state"] in ("in_doubt", "lost") else None),
    # one read-modify-write of a database row under the lock; accepted or refused by its fence
    "write": Kind(("proc", "owner", "lock", "row", "start", "end", "accepted", "mode")),
    # a fault the nemesis made, from start to end
    "fault": Kind(("fault", "target", "start", "end")),
}


def check(e: Event) -> Event:
    kind = KINDS.get(e.get("kind", ""))
    if kind is None:
        raise ValueError(f"unknown event kind: {e!r}")
    missing = [f for f in kind.fields if f not in e]
    if missing:
        raise ValueError(f"{e['kind']} event without {missing}: {e!r}")
    return e


def tells(e: Event) -> Optional[int]:
    """When this event told its holder that the hold may be gone, or None."""
    return KINDS[e["kind"]].tells(e)


class Writer:
    """Appends events to a file, one write() per line (whole lines even if the process dies)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.mutex = threading.Lock()

    def __call__(self, kind: str, **fields) -> None:
        line = json.dumps(check({"kind": kind, **fields})) + "\n"
        with self.mutex:
            os.write(self.fd, line.encode())

    def close(self) -> None:
        os.close(self.fd)


def read(paths: Iterable[str]) -> List[Event]:
    events: List[Event] = []
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):  # a line cut by a killed process is left out
                    events.append(check(json.loads(line)))
    return events


def of(events: Iterable[Event], kind: str) -> Iterator[Event]:
    return (e for e in events if e["kind"] == kind)
