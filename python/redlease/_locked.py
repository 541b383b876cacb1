"""``client.locked(...)``: a function that runs on one caller at a time, across processes.

Shared by the blocking and the asyncio client (and redlease.celery): the lock's name from the
call's arguments, the checks made once when the function is decorated, and what a busy lock
does. The lock itself is taken and released by each client's own wrapper.
"""

import inspect
import logging
import string
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

from ._errors import LockTimeout

Name = Union[str, bytes]
# A fixed name, a format string over the call's arguments, or a callable of them.
NameSpec = Union[str, bytes, Callable[..., Name]]

log = logging.getLogger("redlease")

ON_BUSY = ("skip", "raise")


def check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("timeout must be a number of seconds")
    if timeout != -1 and not 0 <= timeout < float("inf"):
        raise ValueError("timeout must be -1 (wait forever) or a finite number of seconds >= 0")
    return float(timeout)


def check_on_busy(on_busy: str, allowed: Tuple[str, ...] = ON_BUSY) -> str:
    if on_busy not in allowed:
        raise ValueError(f"on_busy must be one of {', '.join(map(repr, allowed))}, "
                         f"not {on_busy!r}")
    return on_busy


def check_name(spec: NameSpec) -> NameSpec:
    if not isinstance(spec, (str, bytes)) and not callable(spec):
        raise TypeError("the lock's name must be a str, bytes or a callable")
    if isinstance(spec, (str, bytes)) and not spec:
        raise ValueError("the lock's name must not be empty")
    return spec


class Namer:
    """The lock's name for one call of ``func``: ``spec`` as it is (bytes, or a str with no
    ``{}`` fields), ``spec.format(**arguments)`` (a str with fields, each naming a parameter of
    ``func``; checked here, once), or ``spec(*args, **kwargs)`` (a callable)."""

    def __init__(self, spec: NameSpec, func: Callable[..., Any]) -> None:
        self._spec = check_name(spec)
        self._signature = None
        if isinstance(spec, str):
            fields = [f for _, f, _, _ in string.Formatter().parse(spec) if f is not None]
            if fields:
                self._signature = inspect.signature(func)
                params = self._signature.parameters
                for field in fields:
                    head = field.split(".", 1)[0].split("[", 1)[0]
                    if head not in params:
                        raise ValueError(f"lock name {spec!r}: {{{field}}} is not a parameter "
                                         f"of {func.__qualname__}")

    def __call__(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Name:
        spec = self._spec
        if isinstance(spec, bytes):
            return spec
        if isinstance(spec, str):
            if self._signature is None:
                return spec
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return spec.format(**bound.arguments)
        name = spec(*args, **kwargs)
        if not isinstance(name, (str, bytes)):
            raise TypeError(f"the lock-name callable returned {type(name).__name__}, "
                            "not str or bytes")
        return name


def busy(name: Name, func: Callable[..., Any], on_busy: str) -> None:
    """The lock is held elsewhere: ``skip`` logs it (INFO, the ``redlease`` logger) and the call
    returns None; ``raise`` raises LockTimeout."""
    if on_busy == "raise":
        raise LockTimeout(f"lock {name!r} is held by another owner: {func.__qualname__} not run")
    log.info("lock %r is held by another owner: %s skipped", name, func.__qualname__)


T = TypeVar("T")


def run_alone(lock: Any, timeout: float, when_busy: Callable[[], None],
              func: Callable[..., T], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Optional[T]:
    """Runs func holding lock (acquired within timeout) and releases it; when the lock stays
    busy, calls when_busy() (which may raise) and returns None without running func. The blocking
    client's locked() and the Celery singleton share it."""
    if not lock.acquire(timeout=timeout):
        when_busy()
        return None
    try:
        return func(*args, **kwargs)
    finally:
        lock.release()
