"""The rest of the family for redlease.asyncio: semaphores, permit-expirable semaphores and
count-down latches, each a thin awaitable wrapper over the core's async calls (as the locks of
_aio_locks.py are). Their waits are woken by the core's pub/sub subscriber; every other call runs
on the core's workers; nothing here blocks the loop. Permits and counts belong to the client, as
with the blocking family: any task of it may give a permit back."""

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Optional, Union

from . import _core
from ._aio_locks import Lock
from ._errors import LockTimeout

if TYPE_CHECKING:
    from .asyncio import Client

Name = Union[str, bytes]
_Start = Callable[[_core.Completions, Any], _core.Call]


class _Family:
    """What the family's objects share: the client, and the two ways of calling the core."""

    def __init__(self, client: "Client", core: Any) -> None:
        self._client = client
        self._core = core

    @property
    def name(self) -> Name:
        return self._core.name  # type: ignore[no-any-return]

    async def _wait(self, start: _Start, undo: Callable[[Any], Awaitable[None]]) -> Any:
        """A wait of the core (acquire, latch wait): its answer, or LockTimeout. Cancelled, it
        leaves nothing taken: the core gives back what a try got after the cancel, and what
        was got before it is given back here (``undo``)."""
        client = self._client
        context = client._context()  # the task's: its end cancels the wait
        answer = client._answer()
        call = start(client._completions_now(), answer.done)
        owners = client._owners_now()
        owners.waiting(context, call)
        try:
            return await answer.result()
        except asyncio.CancelledError:
            call.cancel()
            await answer.through_cancels()
            if answer.error is None and answer.value:  # it ended before the cancel came
                await undo(answer.value)
            raise
        except GeneratorExit:  # the coroutine was closed unfinished: it can await no more
            call.cancel()
            raise
        finally:
            owners.waited(context, call)

    async def _run(self, op: str, arg: Any = None, lease: Optional[float] = None) -> Any:
        """One round trip on the core's workers; run to its end even when the task is
        cancelled (CancelledError is raised once it has ended)."""
        answer = self._client._answer()
        self._client._completions_now().family(self._core, op, answer.done, arg, lease)
        return await Lock._finish(answer)

    def __repr__(self) -> str:
        return f"<redlease.asyncio.{type(self).__name__} {self.name!r}>"


class Semaphore(_Family):
    """A Redisson RSemaphore (see redlease.Semaphore): permits belong to the client; ``async
    with sem:`` takes one for the block. Made by Client.semaphore()."""

    def __init__(self, client: "Client", core: _core.Semaphore, timeout: float) -> None:
        super().__init__(client, core)
        self._timeout = timeout

    @property
    def held(self) -> int:
        """Permits of this semaphore the client holds (no round trip)."""
        return self._core.held  # type: ignore[no-any-return]

    async def _take(self, permits: int, timeout: float) -> None:
        async def give_back(_: Any) -> None:
            await self.release(permits)

        await self._wait(lambda comp, done: comp.semaphore_acquire(self._core, permits, timeout,
                                                                   done), give_back)

    async def acquire(self, permits: int = 1, timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` at once, all or none; False when they were not free in time.
        ``timeout``: seconds, -1 forever, 0 one try (None: the semaphore's). Cancelled, it
        leaves no permit taken."""
        try:
            await self._take(permits, self._timeout if timeout is None else timeout)
        except LockTimeout:
            return False
        return True

    async def release(self, permits: int = 1) -> None:
        """Gives back permits this client took (NotOwnedError when it holds fewer)."""
        await self._run("semaphore.release", permits)

    async def try_set_permits(self, permits: int) -> bool:
        """Sets the number of permits when the semaphore does not exist yet; False when it
        exists (left alone)."""
        return bool(await self._run("semaphore.try_set_permits", permits))

    async def add_permits(self, permits: int) -> None:
        """Adds permits (negative: takes some away)."""
        await self._run("semaphore.add_permits", permits)

    async def available_permits(self) -> int:
        """The permits free now (one round trip)."""
        return int(await self._run("semaphore.available_permits"))

    async def drain_permits(self) -> int:
        """Takes every free permit; how many (they are this client's to release)."""
        return int(await self._run("semaphore.drain_permits"))

    async def __aenter__(self) -> "Semaphore":
        await self._take(1, self._timeout)  # LockTimeout in the core's words
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()


class PermitExpirableSemaphore(_Family):
    """A Redisson RPermitExpirableSemaphore (see redlease.PermitExpirableSemaphore): each permit
    has an id and a lease. Made by Client.permit_expirable_semaphore()."""

    async def _take(self, lease: Optional[float], timeout: float) -> str:
        async def give_back(permit_id: Any) -> None:
            await self.release(permit_id)

        return await self._wait(  # type: ignore[no-any-return]
            lambda comp, done: comp.permit_acquire(self._core, lease, timeout, done), give_back)

    async def acquire(self, lease: Optional[float], timeout: float = -1) -> Optional[str]:
        """Takes one permit and answers its id; None when none came in time. ``lease``: seconds
        after which it comes back by itself, or None to have the watchdog renew it until
        released. Cancelled, it leaves no permit taken."""
        try:
            return await self._take(lease, timeout)
        except LockTimeout:
            return None

    @contextlib.asynccontextmanager
    async def permit(self, lease: Optional[float], timeout: float = -1) -> AsyncIterator[str]:
        """``async with sem.permit(lease) as permit_id:`` takes a permit for the block and gives
        it back at its end; LockTimeout when none came within ``timeout`` seconds."""
        permit_id = await self._take(lease, timeout)
        try:
            yield permit_id
        finally:
            await self.release(permit_id)

    async def release(self, permit_id: str) -> None:
        """Gives a permit back (NotOwnedError: not held; LockLostError: it had expired)."""
        await self._run("permits.release", permit_id)

    async def update_lease_time(self, permit_id: str, lease: float) -> None:
        """The permit's lease becomes ``lease`` seconds from now (its renewal stops)."""
        await self._run("permits.update_lease_time", permit_id, lease)

    async def try_set_permits(self, permits: int) -> bool:
        """Sets the number of permits when the semaphore does not exist yet; False when it
        exists (left alone)."""
        return bool(await self._run("permits.try_set_permits", permits))

    async def add_permits(self, permits: int) -> None:
        """Adds permits (negative: takes some away)."""
        await self._run("permits.add_permits", permits)

    async def available_permits(self) -> int:
        """The permits free now, expired ones counted back in."""
        return int(await self._run("permits.available_permits"))

    def lost_reason(self, permit_id: str) -> Optional[str]:
        """Why a permit the watchdog renews was lost while held (no round trip); None if not."""
        return self._core.lost_reason(permit_id)  # type: ignore[no-any-return]


class CountDownLatch(_Family):
    """A Redisson RCountDownLatch (see redlease.CountDownLatch). Made by
    Client.count_down_latch()."""

    async def try_set_count(self, count: int) -> bool:
        """Sets the count when the latch does not exist; False when it exists."""
        return bool(await self._run("latch.try_set_count", count))

    async def count_down(self) -> None:
        """Counts down by one; at 0 the latch is deleted and every waiter wakes."""
        await self._run("latch.count_down")

    async def count(self) -> int:
        """The count now (0 when the latch does not exist)."""
        return int(await self._run("latch.count"))

    async def wait(self, timeout: float = -1) -> bool:
        """Waits until the count is 0: True; False when ``timeout`` seconds passed first."""
        async def nothing(_: Any) -> None:
            pass

        try:
            await self._wait(lambda comp, done: comp.latch_wait(self._core, timeout, done),
                             nothing)
        except LockTimeout:
            return False
        return True

    async def delete(self) -> bool:
        """Deletes the latch whatever its count; True when it existed (waiters wake)."""
        return bool(await self._run("latch.delete"))
