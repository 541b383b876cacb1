"""Green threads: under gevent's monkey-patching, a hold belongs to the greenlet and a lock wait
yields to the hub.

Checked when a Client is made. When gevent has patched ``threading``, the core is told (through
``_core._set_green``) to take owner contexts from here (one per greenlet, made on first use and
ended when the greenlet is collected) and to hand lock acquires that may wait to ``_acquire``:
the core's async call, answered through a Completions whose eventfd the hub watches. Eventlet's
patching is refused: redlease cannot see its green threads.
"""

import importlib
import sys
import weakref
from typing import Any, Optional

from . import _core

_active = False
_contexts: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
_completions: Optional[_core.Completions] = None
_watcher: Any = None


def check() -> None:
    """Turns green mode on under gevent's patching; refuses eventlet's."""
    global _active
    if _active:
        return
    patcher = sys.modules.get("eventlet.patcher")
    if patcher is not None and patcher.is_monkey_patched("thread"):
        raise RuntimeError("redlease does not support eventlet's monkey-patching: a lock's owner "
                           "would be the OS thread, shared by every green thread. Use gevent, "
                           "OS threads or redlease.asyncio")
    monkey = sys.modules.get("gevent.monkey")
    if monkey is None or not monkey.is_module_patched("threading"):
        return
    _core._set_green(_context, _acquire)
    _active = True


def _gevent(name: str = "gevent") -> Any:
    return importlib.import_module(name)  # gevent is optional: typed as Any


def _context() -> int:
    greenlet = _gevent().getcurrent()
    context = _contexts.get(greenlet)
    if context is None:
        context = _bridge().new_context()
        _contexts[greenlet] = context
        # A greenlet that ends, or is collected, while holding: its holds are released (reported
        # as abandoned), once. A gevent Greenlet tells its end (rawlink); a bare greenlet only
        # its collection.
        ended = weakref.finalize(greenlet, _core_context_ended, context)
        rawlink = getattr(greenlet, "rawlink", None)
        if rawlink is not None:
            rawlink(lambda _greenlet: ended())
    return context


def _core_context_ended(context: int) -> None:
    from ._client import _open_clients

    for client in list(_open_clients):
        if not client.closed:
            _bridge().context_ended(client._core, context)


def _bridge() -> _core.Completions:
    """The Completions of the hub (one per process: gevent runs one hub per thread, and green
    mode serves the main one)."""
    global _completions, _watcher
    if _completions is None:
        _completions = _core.Completions()
        _watcher = _gevent().get_hub().loop.io(_completions.fileno(), 1)
        _watcher.start(_completions.run)
    return _completions


def _acquire(lock: _core.Lock, context: int, timeout: float, lease: Optional[float],
             max_hold_ms: int) -> bool:
    result = _gevent("gevent.event").AsyncResult()

    def done(value: Any, error: Optional[BaseException]) -> None:
        if error is not None:
            result.set_exception(error)
        else:
            result.set(value)
    extra = {} if max_hold_ms == 0 else {
        "max_hold": None if max_hold_ms < 0 else max_hold_ms / 1000}
    call = _bridge().acquire(lock, context, timeout, lease, done, **extra)
    try:
        return bool(result.get())
    except BaseException:  # killed, a gevent.Timeout, Ctrl-C, or the acquire's own error
        # Nothing stays held: a wait in progress is cancelled, and a hold granted before the
        # interruption reached this greenlet (its answer already given) is released.
        if not result.ready():
            call.cancel()
        try:
            got = result.get()
        except Exception:
            got = False
        if got:
            try:
                lock.release()
            except Exception:  # e.g. already lost: the interruption is what this raises
                pass
        raise
