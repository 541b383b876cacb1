"""redlease for Celery: a task that runs on one worker at a time, per name or per arguments.

    import redlease
    import redlease.celery

    client = redlease.Client("redis://127.0.0.1:6379/0")  # at import: fine under prefork

    @app.task
    @redlease.celery.singleton(client)
    def nightly_report():
        ...

The lock is held in watchdog mode for exactly the task's run: renewed while it runs however long
that is, released when it returns or raises, and, when the worker dies mid-task, freed by its
lease running out (the client's ``watchdog_timeout``, 30 s by default), so that the next run is
not blocked longer. A run that finds the lock held is skipped (a log line, the task returns
None): the scheduler sends the next one. See docs/python.md, "Scheduled work".

Celery itself is not imported here (``pip install "redlease[celery]"`` installs it): the
decorator wraps the plain function that ``@app.task`` then makes a task.
"""

import functools
import importlib
import inspect
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from ._client import Client
from ._locked import Namer, NameSpec, busy, check_name, check_on_busy, check_timeout, run_alone
from ._unset import UNSET, MaxHold

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    _P = ParamSpec("_P")

__all__ = ["singleton"]

R = TypeVar("R")
ON_BUSY = ("skip", "retry", "raise")


def singleton(client: Client, name: Optional[NameSpec] = None, *, on_busy: str = "skip",
              timeout: float = 0, max_hold: MaxHold = UNSET,
              ) -> "Callable[[Callable[_P, R]], Callable[_P, Optional[R]]]":
    """A decorator, put below ``@app.task``: the task runs on one worker at a time.

    ``name``: the lock's name; default ``"celery:singleton:<module>.<function>"``, one lock for
    every call of the task. A str with ``{fields}`` is formatted with the call's arguments by
    parameter name (``"celery:report:{day}"``: one run at a time per day); a callable is given
    the call's arguments and returns the name. ``timeout`` (seconds, default 0: one try): how
    long a run waits for the lock. A run that does not get it is ``on_busy``:

    - ``"skip"`` (default): logged (INFO, the ``redlease`` logger), and the task returns None;
    - ``"retry"``: ``task.retry()``, with the task's own ``default_retry_delay`` and
      ``max_retries`` (called directly, outside a worker, there is no task: LockTimeout);
    - ``"raise"``: LockTimeout, and the task fails.

    ``max_hold`` (seconds) caps how long one run may hold the lock (default: the client's,
    no cap). A hold lost while the task ran (Redis unreachable for a whole lease, say) raises
    LockLostError when the task returns: the run may not have been alone.
    """
    if name is not None:
        check_name(name)
    timeout = check_timeout(timeout)
    check_on_busy(on_busy, ON_BUSY)

    def decorate(func: "Callable[_P, R]") -> "Callable[_P, Optional[R]]":
        if inspect.iscoroutinefunction(func):
            raise TypeError(f"{func.__qualname__} is a coroutine function; Celery tasks are not")
        spec = name if name is not None else f"celery:singleton:{func.__module__}." \
                                             f"{func.__qualname__}"
        namer = Namer(spec, func)

        @functools.wraps(func)
        def run(*args: "_P.args", **kwargs: "_P.kwargs") -> Optional[R]:
            lock_name = namer(args, kwargs)

            def when_busy() -> None:
                if on_busy == "retry":  # outside a worker (a direct call): there is no task
                    task: Any = importlib.import_module("celery").current_task
                    if task is not None:
                        raise task.retry()
                busy(lock_name, func, "raise" if on_busy == "retry" else on_busy)

            return run_alone(client.lock(lock_name, max_hold=max_hold), timeout, when_busy, func,
                             args, kwargs)
        return run
    return decorate
