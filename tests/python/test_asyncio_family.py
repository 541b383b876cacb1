"""redlease.asyncio's semaphores and latch: the blocking family's API as coroutines, in Redisson's
layout; waits woken by pub/sub on the loop (never blocking it), timeouts in the user's words, and
cancellation at each point that leaves no permit taken. Every test under the default event loop
and uvloop."""

import asyncio
import time

import pytest

import redlease
from redlease.asyncio import Client, red_lock
from redlease.testing import RedisServer

try:
    import uvloop
except ImportError:  # pragma: no cover - the test extras install it
    uvloop = None


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request):
    """run(coroutine function): its result, on a fresh loop of the parameter's kind."""
    if request.param == "uvloop" and uvloop is None:
        pytest.fail("uvloop is not installed (pip install '.[test]')")
    factory = uvloop.new_event_loop if request.param == "uvloop" else asyncio.new_event_loop

    def runner(fn, *args):
        loop = factory()
        try:
            return loop.run_until_complete(fn(*args))
        finally:
            loop.close()
    return runner


def numsub(raw, channel):
    return raw("PUBSUB", "NUMSUB", channel)[1]


async def until(check, seconds=5.0):
    """Waits until check() is true once (asking again could see a later change)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.01)


# ---- semaphore ------------------------------------------------------------------------------

def test_semaphore_in_redissons_layout_as_the_blocking_one(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("exports")
            assert await sem.try_set_permits(3) is True
            assert raw("GET", "exports") == b"3"
            assert await sem.try_set_permits(10) is False
            assert await sem.acquire(2) is True
            assert raw("GET", "exports") == b"1" and sem.held == 2
            assert await sem.acquire(2, timeout=0) is False
            assert await sem.available_permits() == 1
            await sem.release()
            await sem.release()
            assert raw("GET", "exports") == b"3"
            await sem.add_permits(2)
            await sem.add_permits(-1)
            assert raw("GET", "exports") == b"4"
            assert await sem.drain_permits() == 4
            await sem.release(4)
            assert await sem.available_permits() == 4
            with pytest.raises(redlease.NotOwnedError, match="this client holds 0"):
                await sem.release()
            assert sem.name == "exports" and "exports" in repr(sem)
    run(main)


def test_semaphore_limits_concurrency_towards_an_upstream(run, server):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("upstream")
            await sem.try_set_permits(3)
            inside, most = [0], [0]

            async def call_upstream():
                async with sem:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    await asyncio.sleep(0.01)
                    inside[0] -= 1

            await asyncio.gather(*(call_upstream() for _ in range(30)))
            assert most[0] == 3
            assert await sem.available_permits() == 3 and sem.held == 0
    run(main)


def test_a_release_by_another_task_or_client_wakes_a_waiter(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("wake")
            await sem.try_set_permits(1)
            assert await sem.acquire()
            waiter = asyncio.create_task(sem.acquire())
            await until(lambda: numsub(raw, "redisson_sc:{wake}") == 1)
            await asyncio.sleep(0.1)
            assert not waiter.done()
            start = time.monotonic()
            await asyncio.create_task(sem.release())  # permits are the client's: any task
            assert await waiter is True
            assert time.monotonic() - start < 2
            await sem.release()
            await until(lambda: numsub(raw, "redisson_sc:{wake}") == 0)
            other = client.sync.semaphore("wake")  # the blocking API, another thread's call
            assert other.acquire(timeout=0)
            waiter = asyncio.create_task(sem.acquire())
            await until(lambda: numsub(raw, "redisson_sc:{wake}") == 1)
            await asyncio.get_running_loop().run_in_executor(None, other.release)
            assert await waiter is True
            await sem.release()
    run(main)


def test_semaphore_timeouts_in_the_users_words(run, server):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("never-set", timeout=0.2)
            start = time.monotonic()
            assert await sem.acquire() is False
            assert 0.15 < time.monotonic() - start < 3
            with pytest.raises(redlease.LockTimeout) as info:
                async with sem:
                    pass
            assert 'semaphore "never-set" has no permits (it does not exist)' in str(info.value)
            assert "try_set_permits" in str(info.value)
            await sem.try_set_permits(1)
            async with sem:
                with pytest.raises(redlease.LockTimeout,
                                   match=r"1 permit\(s\) not free within 0.200 s"):
                    async with sem:
                        pass
            with pytest.raises(ValueError, match="permits"):
                await sem.acquire(-1)
            with pytest.raises(ValueError, match="timeout"):
                await sem.acquire(1, timeout=-3)
    run(main)


def test_a_cancelled_semaphore_waiter_takes_nothing_and_unsubscribes(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("cw")
            await sem.try_set_permits(1)
            await sem.acquire()
            waiter = asyncio.create_task(sem.acquire())
            await until(lambda: numsub(raw, "redisson_sc:{cw}") == 1)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await until(lambda: numsub(raw, "redisson_sc:{cw}") == 0)
            await sem.release()
            assert raw("GET", "cw") == b"1" and sem.held == 0
    run(main)


def test_cancel_at_any_point_never_leaves_a_permit_taken(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("inflight")
            await sem.try_set_permits(1)
            outcomes = set()
            for i in range(200):
                task = asyncio.create_task(sem.acquire(timeout=0))
                for _ in range(i % 4):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    assert await task is True  # done before the cancel came
                    outcomes.add("acquired")
                    await sem.release()
                except asyncio.CancelledError:
                    outcomes.add("cancelled")
                assert raw("GET", "inflight") == b"1", f"a permit taken after cancel {i}"
                assert sem.held == 0
            assert "cancelled" in outcomes
    run(main)


def test_cancel_after_redis_gave_the_permit_gives_it_back(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("granted")
            await sem.try_set_permits(1)
            task = asyncio.create_task(sem.acquire(timeout=0))
            await asyncio.sleep(0)  # the acquire is sent
            deadline = time.monotonic() + 5
            while raw("GET", "granted") != b"0" and time.monotonic() < deadline:
                time.sleep(0.001)  # blocks the loop on purpose: the answer waits in the queue
            assert raw("GET", "granted") == b"0"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert raw("GET", "granted") == b"1" and sem.held == 0
    run(main)


def test_wait_for_around_acquire_leaves_nothing(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("wf")
            await sem.try_set_permits(1)
            await sem.acquire()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sem.acquire(), 0.2)
            await sem.release()
            assert raw("GET", "wf") == b"1" and sem.held == 0
    run(main)


def test_the_loop_is_never_blocked_while_many_tasks_wait(run, server):
    async def main():
        async with Client(server.url) as client:
            sem = client.semaphore("busy")
            await sem.try_set_permits(2)
            latch = client.count_down_latch("never")
            await latch.try_set_count(1)
            stop = False

            async def worker():
                n = 0
                while not stop:
                    async with sem:
                        n += 1
                        await asyncio.sleep(0)
                return n
            workers = [asyncio.create_task(worker()) for _ in range(50)]
            latch_waiters = [asyncio.create_task(latch.wait()) for _ in range(200)]
            await asyncio.sleep(0.5)
            worst = []
            for _ in range(3):  # a busy machine may preempt the process: one window clean
                gaps, last = [], time.monotonic()
                end = last + 1.0
                while last < end:
                    await asyncio.sleep(0.001)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
                worst.append(max(gaps))
                if worst[-1] < 0.020:
                    break
            stop = True
            rounds = sum(await asyncio.gather(*workers))
            assert not any(w.done() for w in latch_waiters)
            await latch.count_down()
            assert all(await asyncio.gather(*latch_waiters))
            assert rounds > 50
            assert min(worst) < 0.020, worst
    run(main)


def test_sync_semaphore_from_a_coroutine_points_to_the_async_one(run, server):
    async def main():
        client = redlease.Client(server.url)
        try:
            with pytest.raises(RuntimeError, match=r"redlease.asyncio's Client.semaphore\(\)"):
                client.semaphore("s").acquire()
            with pytest.raises(RuntimeError,
                               match=r"redlease.asyncio's Client.count_down_latch\(\)"):
                client.count_down_latch("l").wait()
        finally:
            client.close()
    run(main)


# ---- permit-expirable semaphore ---------------------------------------------------------------

def test_permits_with_ids_and_leases(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.permit_expirable_semaphore("workers")
            assert await sem.try_set_permits(2) is True
            permit = await sem.acquire(5)
            assert isinstance(permit, str) and len(permit) == 32
            assert raw("GET", "workers") == b"1"
            assert raw("ZSCORE", "{workers}:timeout", bytes.fromhex(permit)) is not None
            assert await sem.available_permits() == 1
            await sem.update_lease_time(permit, 20)
            await sem.release(permit)
            assert raw("GET", "workers") == b"2"
            with pytest.raises(redlease.NotOwnedError, match=permit):
                await sem.release(permit)
            with pytest.raises(ValueError, match="32 hex digits"):  # as the blocking one
                await sem.release("not-a-permit")
            await sem.add_permits(-1)
            async with sem.permit(lease=None) as renewed:  # the watchdog renews it
                assert sem.lost_reason(renewed) is None
                assert await sem.acquire(5, timeout=0) is None
            assert await sem.available_permits() == 1
    run(main)


def test_a_permit_waiter_is_woken_by_a_release_and_a_cancelled_one_takes_none(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            sem = client.permit_expirable_semaphore("pw")
            await sem.try_set_permits(1)
            held = await sem.acquire(10)
            waiter = asyncio.create_task(sem.acquire(10))
            await until(lambda: numsub(raw, "redisson_sc:{pw}") == 1)
            await sem.release(held)
            permit = await waiter
            assert permit is not None and permit != held
            await until(lambda: numsub(raw, "redisson_sc:{pw}") == 0)  # the waiter's is gone
            cancelled = asyncio.create_task(sem.acquire(10))
            await until(lambda: numsub(raw, "redisson_sc:{pw}") == 1)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            await sem.release(permit)
            assert await sem.available_permits() == 1
            with pytest.raises(redlease.LockTimeout, match="has no permits"):
                async with client.permit_expirable_semaphore("unset").permit(5, timeout=0.1):
                    pass
    run(main)


# ---- count-down latch -------------------------------------------------------------------------

def test_latch_as_the_blocking_one_and_every_waiter_wakes(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            latch = client.count_down_latch("start")
            assert await latch.wait(timeout=0) is True  # no latch: nothing to wait for
            assert await latch.try_set_count(2) is True
            assert await latch.try_set_count(5) is False
            assert await latch.count() == 2
            waiters = [asyncio.create_task(latch.wait()) for _ in range(5)]
            await until(lambda: numsub(raw, "redisson_countdownlatch__channel__{start}") == 1)
            await latch.count_down()
            await asyncio.sleep(0.1)
            assert not any(w.done() for w in waiters)
            await latch.count_down()
            assert await asyncio.gather(*waiters) == [True] * 5
            assert raw("EXISTS", "start") == 0
            await latch.try_set_count(1)
            start = time.monotonic()
            assert await latch.wait(timeout=0.2) is False
            assert 0.15 < time.monotonic() - start < 3
            assert await latch.delete() is True and await latch.delete() is False
            assert latch.name == "start"
    run(main)


def test_closing_the_client_ends_the_family_waits(run, server):
    async def main():
        client = Client(server.url)
        sem = client.semaphore("closing")
        latch = client.count_down_latch("closing-latch")
        await latch.try_set_count(1)
        waits = [asyncio.create_task(sem.acquire()), asyncio.create_task(latch.wait())]
        await asyncio.sleep(0.2)
        await client.close()
        for w in waits:
            with pytest.raises(redlease.ClientClosedError):
                await w
    run(main)


# ---- multi-lock and RedLock -------------------------------------------------------------------

def test_multi_lock_all_or_none_owned_by_the_task(run, server, raw):
    async def main():
        async with Client(server.url) as a, Client(server.url) as b:
            multi = a.multi_lock(a.lock("m:a"), a.fair_lock("m:b"), a.rw_lock("m:c").write)
            other = b.fair_lock("m:b")  # the same kind: its release wakes the fair waiter
            held = asyncio.Event()

            async def hold_briefly():
                assert await other.acquire()
                held.set()
                await asyncio.sleep(0.4)
                await other.release()
            holder = asyncio.create_task(hold_briefly())
            await held.wait()
            assert await multi.acquire(blocking=False) is False
            assert multi.held == 0 and raw("EXISTS", "m:a") == 0
            start = time.monotonic()
            assert await multi.acquire(timeout=5) is True  # woken by the holder's release
            assert 0.2 < time.monotonic() - start < 3
            await holder
            assert multi.held == 3
            assert await asyncio.create_task(multi.acquire(timeout=0)) is False  # another task
            with pytest.raises(redlease.NotOwnedError):
                await asyncio.create_task(multi.release())
            await multi.release()
            assert raw("EXISTS", "m:a") + raw("EXISTS", "m:b") + raw("EXISTS", "m:c") == 0
            async with multi:
                assert multi.held == 3
            with pytest.raises(redlease.NotOwnedError):
                await multi.release()
            assert multi.redlock is False and "m:a" in repr(multi)
    run(main)


def test_multi_lock_wait_covers_all_and_sets_the_lease(run, server, raw):
    async def main():
        async with Client(server.url) as a, Client(server.url) as b:
            multi = a.multi_lock(a.lock("w:a"), a.lock("w:b"), timeout=0.2)
            assert await b.lock("w:b").acquire(lease=0.5)  # another owner; expires by itself
            with pytest.raises(redlease.LockTimeout, match="multi-lock of 2 locks not acquired"):
                async with multi:
                    pass
            start = time.monotonic()
            assert await multi.acquire(timeout=3, lease=8)
            assert 0.1 < time.monotonic() - start < 2.5
            assert 7000 < raw("PTTL", "w:a") <= 8000 and 7000 < raw("PTTL", "w:b") <= 8000
            await multi.release()
            with pytest.raises(ValueError, match="lease"):
                await multi.acquire(lease=0)
            with pytest.raises(ValueError, match="non-blocking"):
                await multi.acquire(False, 1)
            with pytest.raises(TypeError, match="redlease.asyncio locks"):
                a.multi_lock(a.lock("x"), a.sync.lock("y"))  # type: ignore[arg-type]
    run(main)


def test_a_cancelled_multi_lock_acquire_leaves_nothing_held(run, server, raw):
    async def main():
        async with Client(server.url) as client, Client(server.url) as other:
            locks = [client.lock(f"mc:{i}") for i in range(3)]
            multi = client.multi_lock(*locks)
            holder = other.lock("mc:2")
            assert await holder.acquire(timeout=0)
            waiter = asyncio.create_task(multi.acquire())  # forever
            await asyncio.sleep(0.3)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert raw("EXISTS", "mc:0") + raw("EXISTS", "mc:1") == 0 and multi.held == 0
            await holder.release()
            outcomes = set()

            async def take_and_give_back():
                # a hold belongs to the task that took it: that task gives it back (a release
                # runs to its end even when the cancel lands on it)
                got = await multi.acquire(timeout=1)
                if got:
                    await multi.release()
                return got

            for i in range(100):
                task = asyncio.create_task(take_and_give_back())
                for _ in range(i % 5):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    assert await task is True
                    outcomes.add("acquired")
                except asyncio.CancelledError:
                    outcomes.add("cancelled")
                assert sum(raw("EXISTS", f"mc:{j}") for j in range(3)) == 0, f"held after {i}"
            assert "cancelled" in outcomes
    run(main)


def test_red_lock_over_independent_servers_and_a_task_that_ends_holding(run, raw):
    async def main(servers):
        clients = [Client(s.url, command_timeout=0.5) for s in servers]
        try:
            red = red_lock(*(c.lock("red") for c in clients), lease=10)
            assert red.redlock and "RedLock" in repr(red)
            async with red:
                assert red.held == 3
            servers[2].stop()  # one of three down: still a majority
            async with red:
                assert red.held == 2
            assert await clients[0].lock("red").locked() is False

            async def ends_holding():
                assert await red.acquire(timeout=5, lease=None)  # the watchdog renews
            await asyncio.create_task(ends_holding())
            # the task ended: its holds are released on every member's client
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and (await clients[0].lock("red").locked() or
                                                   await clients[1].lock("red").locked()):
                await asyncio.sleep(0.05)
            assert not await clients[0].lock("red").locked()
            assert not await clients[1].lock("red").locked()
        finally:
            for c in clients:
                await c.close()

    servers = [RedisServer().start() for _ in range(3)]
    try:
        run(main, servers)
    finally:
        for s in servers:
            s.close()
