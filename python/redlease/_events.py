"""Turns the core's events into log records and on_lost calls.

Runs on the client's event thread (never the watchdog's), with the GIL held. It holds no reference
to the Client, so a client is never kept alive, or closed, by its own event thread.
"""

import logging
from typing import Callable, Optional, Union

from . import _core

log = logging.getLogger("redlease")

OnLost = Callable[[Union[str, bytes], str], object]


def shown_name(raw: bytes) -> Union[str, bytes]:
    """The lock name as users passed it, most likely: str when it is UTF-8, else bytes."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class EventDispatcher:
    """The callable handed to the core client."""

    def __init__(self, on_lost: Optional[OnLost]) -> None:
        self.on_lost = on_lost

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
        elif kind == _core.EVENT_LOST and name is not None:
            lock_name = shown_name(name)
            log.error("lock %r lost while held: %s", lock_name, reason)
            if self.on_lost is not None:
                try:
                    self.on_lost(lock_name, reason)
                except Exception:
                    log.exception("on_lost callback raised for lock %r", lock_name)
