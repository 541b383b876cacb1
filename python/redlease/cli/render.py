"""Aligned tables and JSON for the ``redlease`` command."""

import json
import math
from typing import Any, Dict, List, Optional, Sequence, Union

from .._ops import Inspection

NAME_SHOWN = 60


def name_text(name: bytes) -> str:
    """A key name for a terminal: UTF-8 where it is, escapes elsewhere."""
    return name.decode("utf-8", "backslashreplace")


def seconds(value: Optional[float]) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "no expiry"
    return f"{value:.1f} s"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> List[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    for r in rows:
        lines.append(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return [line.rstrip() for line in lines]


def kind_text(found: Inspection) -> str:
    kind = found["kind"]
    if kind == "read_write":
        return f"read_write (mode {found['mode']})"
    if kind == "other":
        return f"other ({found['type']}: not lock-shaped)"
    if kind == "counter":
        return "counter (semaphore or count-down latch)"
    return kind


def inspection_lines(name: bytes, url: str, found: Inspection) -> List[str]:
    lines = [f"lock        {name_text(name)}", f"server      {url}",
             f"kind        {kind_text(found)}"]
    if found["kind"] == "none":
        if found["last_token"]:  # a free fenced lock: its counter stays (docs/protocol.md)
            return lines + ["            (not held)", f"last token  {found['last_token']}"]
        return lines + ["            (no such key)"]
    lines.append(f"lease left  {seconds(found['lease'])}")
    if found["kind"] == "counter":
        lines.append(f"count       {found['count']}")
    if found["kind"] == "fenced":
        lines.append(f"last token  {found['last_token']}")
    if found["kind"] == "other":
        return lines
    lines.append(f"subscribers {found['subscribers']} (connections waiting for its release)")
    owners = found["owners"]
    if found["kind"] != "counter":
        lines.append(f"owners      {len(owners)}")
        rows = [[o["client_id"] or "?", o["name"] or "?", o["context"],
                 "write" if o["write"] else ("read" if found["kind"] == "read_write" else "-"),
                 str(o["count"]), seconds(o["lease"]), "yes" if o["local"] else "no"]
                for o in owners]
        if rows:
            lines += table(["CLIENT ID", "NAME", "CONTEXT", "MODE", "HOLDS", "LEASE LEFT",
                            "THIS PROCESS"], rows)
    if found["kind"] == "fair":
        lines.append(f"queue       {len(found['queue'])} waiting, in order")
        rows = [[str(i + 1), w["client_id"] or "?", w["name"] or "?", w["context"],
                 seconds(w["timeout"])] for i, w in enumerate(found["queue"])]
        if rows:
            lines += table(["#", "CLIENT ID", "NAME", "CONTEXT", "PLACE KEPT FOR"], rows)
    return lines


def _finite(value: Any) -> Any:
    """JSON has no infinity: a lease without expiry is null, as is a missing key's."""
    if isinstance(value, float) and math.isinf(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def json_text(value: Union[Dict[str, Any], List[Any]]) -> str:
    return json.dumps(_finite(value), sort_keys=True)
