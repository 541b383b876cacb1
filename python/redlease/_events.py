"""Turns the core's events into log records and on_lost calls.

Runs on the client's event thread (never the watchdog's), with the GIL held. It holds no reference
to the Client, so a client is never kept alive, or closed, by its own event thread.
"""

import logging
from typing import Callable, Optional, Union

from . import _core

log = logging.getLogger("redlease")

OnLost = Callable[[Union[str, bytes], str], object]
# on_state(name, state, why): "in_doubt", "held" (confirmed again after being in doubt), "lost"
OnState = Callable[[Union[str, bytes], str, str], object]


def shown_name(raw: bytes) -> Union[str, bytes]:
    """The lock name as users passed it, most likely: str when it is UTF-8, else bytes."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class EventDispatcher:
    """The callable handed to the core client."""

    def __init__(self, on_lost: Optional[OnLost], on_state: Optional[OnState] = None) -> None:
        self.on_lost = on_lost
        self.on_state = on_state

    def _call(self, what: str, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s callback raised for lock %r", what, args[0])

    def __call__(self, kind: int, name: Optional[bytes], context: int, reason: str,
                 holds: int, message: str) -> None:
        if kind == _core.EVENT_RENEWED:
            log.debug("renewed %d hold(s)", holds)
        elif kind == _core.EVENT_RENEW_FAILED:
            log.warning("renewal failed, will retry: %s", message)
        elif kind == _core.EVENT_SYNC_FAILED:
            log.warning("not acknowledged by any replica: %s", message)
        elif kind in (_core.EVENT_STRAY_HOLDS, _core.EVENT_ABANDONED):
            log.warning("%s", message)
        elif kind == _core.EVENT_IN_DOUBT and name is not None:
            log.warning("%s", message)
            if self.on_state is not None:
                self._call("on_state", self.on_state, shown_name(name), "in_doubt", message)
        elif kind == _core.EVENT_CONFIRMED and name is not None:
            log.warning("%s", message)
            if self.on_state is not None:
                self._call("on_state", self.on_state, shown_name(name), "held", message)
        elif kind == _core.EVENT_LOST and name is not None:
            lock_name = shown_name(name)
            log.error("lock %r lost while held: %s", lock_name, reason)
            if self.on_lost is not None:
                self._call("on_lost", self.on_lost, lock_name, reason)
            if self.on_state is not None:
                self._call("on_state", self.on_state, lock_name, "lost", reason)
