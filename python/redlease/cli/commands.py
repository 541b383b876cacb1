"""The ``redlease`` subcommands; each answers an exit code (0 found, 1 not found, 2 refused)."""

import sys
import time
from typing import Any, Dict, List, Optional, TextIO, Tuple

from .._client import Client
from .._ops import Inspection
from .render import inspection_lines, json_text, name_text, seconds, table

FOUND, NOT_FOUND, REFUSED = 0, 1, 2
POLL_SECONDS = 0.5
NOTIFIED_SECONDS = 30.0  # with keyspace notifications: redraw at least this often
LOCK_KINDS = ("reentrant", "fenced", "fair", "read_write")


def _json_inspection(client: Client, name: str, found: Inspection) -> Dict[str, Any]:
    return {"name": name, "url": client.url, **found}


def inspect(client: Client, name: str, as_json: bool, out: TextIO) -> int:
    found = client.inspect(name)
    if as_json:
        print(json_text(_json_inspection(client, name, found)), file=out)
    else:
        print("\n".join(inspection_lines(name.encode(), client.url, found)), file=out)
    return NOT_FOUND if found["kind"] == "none" else FOUND


def watch(client: Client, name: str, as_json: bool, count: int, out: TextIO) -> int:
    """Redraws on every change the server notifies, or every 0.5 s when it does not."""
    notified = client.watch_wait(name, 0)  # (only asks: no subscription made and left)
    how = ("keyspace notifications" if notified
           else f"polling every {POLL_SECONDS} s (keyspace notifications are off)")
    shown = 0
    terminal = out.isatty()
    while True:
        found = client.inspect(name)
        if as_json:
            print(json_text({**_json_inspection(client, name, found), "refresh": how}),
                  file=out, flush=True)
        else:
            if terminal:
                out.write("\x1b[H\x1b[J")
            stamp = time.strftime("%H:%M:%S")
            lines = [f"watching {name}: {how}; Ctrl-C to stop; {stamp}", ""]
            print("\n".join(lines + inspection_lines(name.encode(), client.url, found)),
                  file=out, flush=True)
        shown += 1
        if count and shown >= count:
            return FOUND
        client.watch_wait(name, NOTIFIED_SECONDS if notified else POLL_SECONDS)


def _refusal(found: Inspection) -> Optional[str]:
    kind = found["kind"]
    if kind == "counter":
        return "it is a semaphore or count-down latch (a counter), not a lock"
    if kind == "other":
        return f"it is not lock-shaped (a {found['type']})"
    return None


def _confirmed(name: str, out: TextIO, err: TextIO,
               question: str = "Delete lock {name!r} whoever holds it?") -> bool:
    if not sys.stdin.isatty():
        print(f"redlease: refusing to force-unlock {name!r} without --yes: not on a terminal",
              file=err)
        return False
    out.write(question.format(name=name) + " [y/N] ")
    out.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _unlock(client: Client, name: str, found: Inspection) -> bool:
    kind = found["kind"]
    if kind == "fair":
        return client.fair_lock(name).force_unlock()
    if kind == "read_write":
        rw = client.rw_lock(name)
        return (rw.write if found["mode"] == "write" else rw.read).force_unlock()
    if kind == "fenced":  # its own script: the fence advances too
        return client.fenced_lock(name).force_unlock()
    return client.lock(name).force_unlock()


def force_unlock(client: Client, name: str, as_json: bool, yes: bool, out: TextIO,
                 err: TextIO) -> int:
    found = client.inspect(name)
    # A free fenced lock still has a fence to advance: a holder paused past its lease may write.
    free_fenced = found["kind"] == "none" and found["last_token"] > 0
    if found["kind"] == "none" and not free_fenced:
        print(f"redlease: no lock {name!r}", file=err)
        return NOT_FOUND
    why = _refusal(found)
    if why is not None:
        print(f"redlease: refusing to force-unlock {name!r}: {why}", file=err)
        return REFUSED
    head = "It will advance the fence of:" if free_fenced else "It will delete:"
    if not as_json:
        print("\n".join([head] + inspection_lines(name.encode(), client.url, found)), file=out)
    question = ("Advance the fence of free lock {name!r}?" if free_fenced
                else "Delete lock {name!r} whoever holds it?")
    if not yes and not _confirmed(name, out, err, question):
        return REFUSED
    if free_fenced:
        deleted = client.fenced_lock(name).force_unlock()
    else:
        deleted = _unlock(client, name, found)
    fenced = free_fenced or found["kind"] == "fenced"
    fence = client.inspect(name)["last_token"] if fenced else None
    if as_json:
        print(json_text({"name": name, "deleted": deleted, "was": found, "fence": fence}),
              file=out)
    else:
        print("deleted" if deleted else "it was free already", file=out)
        if fence is not None:
            print(f"fence advanced to {fence}: the evicted holder's token is stale; storage "
                  "that keeps a fence refuses it once told (redlease.fencing)", file=out)
    return FOUND if deleted else NOT_FOUND


def drop_fence(client: Client, name: str, as_json: bool, yes: bool, out: TextIO,
               err: TextIO) -> int:
    """Deletes a free fenced lock's token counter (docs/protocol.md: it is never deleted by the
    locks themselves). Refused while the lock is held."""
    last = client.inspect(name)["last_token"]
    if not last:
        print(f"redlease: no token counter for {name!r}", file=err)
        return NOT_FOUND
    if not yes:
        if not sys.stdin.isatty():
            print(f"redlease: refusing to drop the fence of {name!r} without --yes: not on a "
                  "terminal", file=err)
            return REFUSED
        out.write(f"Delete the token counter of {name!r} (last token {last})? Its next token "
                  "is 1 again: storage fenced with this name must be reset too. [y/N] ")
        out.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            return REFUSED
    dropped = client._core.fence_drop(name)
    if dropped < 0:
        print(f"redlease: refusing to drop the fence of {name!r}: the lock is held", file=err)
        return REFUSED
    if as_json:
        print(json_text({"name": name, "dropped": dropped}), file=out)
    else:
        print(f"dropped (last token {dropped})" if dropped else "there was none", file=out)
    return FOUND if dropped else NOT_FOUND


def _sort_key(found: Inspection) -> Tuple[float, int]:
    lease = found["lease"]
    return (lease if lease is not None else float("inf"),
            -sum(o["count"] for o in found["owners"]))


def scan(client: Client, pattern: Optional[str], limit: int, count: int, as_json: bool,
         out: TextIO, err: TextIO) -> int:
    """Lock-shaped keys, the soonest to expire first (then the most holds)."""
    if limit < 1:
        raise ValueError("--limit must be at least 1")
    progress = err.isatty()
    looked = [0, 0]  # hash keys looked at, steps

    def step(n: int) -> None:
        looked[0] += n
        looked[1] += 1
        if progress:
            err.write(f"\rscanning: {looked[1]} SCAN step(s), {looked[0]} hash keys looked at")
            err.flush()

    names: List[bytes] = []
    for key in client.scan(pattern, count=count, on_step=step):
        names.append(key)
        if len(names) >= limit:
            break
    if progress:
        err.write("\n")
    found = [(n, client.inspect(n)) for n in names]
    found = [(n, f) for n, f in found if f["kind"] in LOCK_KINDS]
    found.sort(key=lambda item: _sort_key(item[1]))
    if as_json:
        print(json_text([{"name": name_text(n), **f} for n, f in found]), file=out)
    elif found:
        rows = [[name_text(n), f["kind"], str(len(f["owners"])),
                 str(sum(o["count"] for o in f["owners"])), seconds(f["lease"]),
                 str(len(f["queue"]) or f["subscribers"])] for n, f in found]
        print("\n".join(table(["NAME", "KIND", "OWNERS", "HOLDS", "LEASE LEFT", "WAITERS"], rows,
                              indent="")), file=out)
    else:
        print("no lock-shaped keys found", file=out)
    return FOUND if found else NOT_FOUND
