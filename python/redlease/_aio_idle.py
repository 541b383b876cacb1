"""An async call's answer given inside the call when the loop has nothing else to run.

An answer comes back through the Completions' eventfd, which the loop watches: the task awaits a
future, the loop wakes from epoll for the eventfd, its reader sets the future, and the task's
next step runs in the loop's next iteration. When nothing else is ready to run, the loop would
only wait in epoll for that wake-up; the call waits for it itself instead, polling the eventfd
together with the loop's own epoll descriptor, and gives the answer at once when it comes first.

The wait is the loop's own idle wait taken a step early: any other event of the loop (a socket,
the self-pipe of call_soon_threadsafe, a signal's wakeup fd) ends it at once, and it ends before
the loop's next timer is due; the loop then runs as it would have. It runs only where the loop's
state can be read: asyncio's selector loop on epoll (not uvloop, not a loop with its own
_run_once), and not in debug mode, whose timing of callbacks it would blur.
"""

import asyncio
import selectors
from typing import Any, Optional

from . import _core

# What a wait reads of the loop (BaseEventLoop's): the callbacks ready to run, stop(), debug mode
# and the heap of timers.
LOOP_STATE = ("_ready", "_stopping", "_debug", "_scheduled")

# The longest wait: past a local round trip by far (tens of µs to a few ms); a later answer saves
# nothing worth a second poll, and the loop waits for it as usual.
MAX_WAIT = 0.005  # s


class IdleWait:
    """Waits for the Completions' answers on the loop's thread while the loop is idle."""

    __slots__ = ("completions", "fd")

    def __init__(self, completions: _core.Completions, fd: int) -> None:
        self.completions = completions
        self.fd = fd

    @staticmethod
    def on(loop: asyncio.AbstractEventLoop, completions: _core.Completions
           ) -> Optional["IdleWait"]:
        """One for `loop`, or None when its idle state can't be read."""
        selector = getattr(loop, "_selector", None)
        run_once = getattr(asyncio.base_events.BaseEventLoop, "_run_once", None)
        if (type(selector) is not getattr(selectors, "EpollSelector", None)
                or run_once is None or getattr(type(loop), "_run_once", None) is not run_once
                or not all(hasattr(loop, name) for name in LOOP_STATE)):
            return None
        assert selector is not None
        return IdleWait(completions, selector.fileno())

    def __call__(self, loop: Any) -> None:
        """Waits while `loop` (this one's, running this call) has nothing else to run."""
        if loop._ready or loop._stopping or loop._debug:
            return
        window = MAX_WAIT
        if loop._scheduled:  # asyncio's heap of timers: the first is due first
            window = min(window, loop._scheduled[0].when() - loop.time())
        if window > 0:
            self.completions.wait(self.fd, window)
