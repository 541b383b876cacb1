"""redlease.asyncio: ownership per task, waits woken by pub/sub on the loop, cancellation at each
point, loss, closing, a loop that is never blocked; every test under the default event loop and
under uvloop."""

import asyncio
import gc
import subprocess
import sys
import threading
import time

import pytest

import redlease
from redlease.asyncio import Client
from testkit import Raw, wait_for

try:
    import uvloop
except ImportError:  # pragma: no cover - the test extras install it
    uvloop = None

CHANNEL = "redisson_lock__channel:{%s}"


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request):
    """run(coroutine function, *args): its result, on a fresh loop of the parameter's kind."""
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


@pytest.fixture(params=["asyncio", "uvloop"])
def new_loop(request):
    """A factory of loops of the parameter's kind, for tests that close (or drop) them."""
    if request.param == "uvloop" and uvloop is None:
        pytest.fail("uvloop is not installed (pip install '.[test]')")
    return uvloop.new_event_loop if request.param == "uvloop" else asyncio.new_event_loop


def numsub(raw, name):
    return raw("PUBSUB", "NUMSUB", CHANNEL % name)[1]


def test_reentrant_per_task_and_isolated_between_tasks(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("re")
            async with lock:
                async with lock:
                    assert lock.hold_count == 2 and lock.held()

                    async def other():
                        return await lock.acquire(timeout=0), lock.hold_count
                    assert await asyncio.create_task(other()) == (False, 0)
                assert lock.hold_count == 1
            assert lock.hold_count == 0
            assert raw("EXISTS", "re") == 0
    run(main)


def test_tasks_on_one_thread_never_share_a_hold(run, server):
    async def main():
        async with Client(server.url) as client:
            inside = []
            most = 0

            async def worker():
                nonlocal most
                lock = client.lock("x", timeout=0)
                if not await lock.acquire():
                    return False
                inside.append(1)
                most = max(most, len(inside))
                await asyncio.sleep(0.05)
                inside.pop()
                await lock.release()
                return True
            got = await asyncio.gather(*(worker() for _ in range(5)))
            assert got.count(True) == 1 and most == 1
    run(main)


def test_release_by_another_task_raises_not_owned(run, server):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("owned")
            await lock.acquire()
            with pytest.raises(redlease.NotOwnedError):
                await asyncio.create_task(lock.release())
            await lock.release()
    run(main)


def test_cancelled_waiter_holds_nothing_and_leaves_no_subscription(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("cw")
            await lock.acquire()
            waiter = asyncio.create_task(lock.acquire())
            for _ in range(200):
                if numsub(raw, "cw") == 1:
                    break
                await asyncio.sleep(0.01)
            assert numsub(raw, "cw") == 1
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await lock.release()
            for _ in range(200):
                if numsub(raw, "cw") == 0:
                    break
                await asyncio.sleep(0.01)
            assert numsub(raw, "cw") == 0
            assert raw("EXISTS", "cw") == 0
    run(main)


def test_cancel_during_the_round_trip_never_leaves_a_hold(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("inflight")
            outcomes = set()
            for i in range(300):
                task = asyncio.create_task(lock.acquire(timeout=0))
                for _ in range(i % 4):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    if await task:  # done before the cancel: the ended task's hold is freed
                        outcomes.add("acquired")
                        for _ in range(300):
                            if raw("EXISTS", "inflight") == 0:
                                break
                            await asyncio.sleep(0.01)
                except asyncio.CancelledError:
                    outcomes.add("cancelled")
                assert raw("EXISTS", "inflight") == 0, f"held after cancel {i}"
                assert lock.hold_count == 0
            assert "cancelled" in outcomes
    run(main)


def test_cancel_after_redis_granted_but_before_the_task_heard_releases_it(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("granted")
            task = asyncio.create_task(lock.acquire(timeout=0))
            await asyncio.sleep(0)  # the acquire is sent
            deadline = time.monotonic() + 5
            while raw("EXISTS", "granted") == 0 and time.monotonic() < deadline:
                time.sleep(0.001)  # blocks the loop on purpose: the answer waits in the queue
            assert raw("EXISTS", "granted") == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert raw("EXISTS", "granted") == 0
    run(main)


@pytest.mark.parametrize("how", ["wait_for", "timeout"])
def test_timeouts_around_acquire_leave_nothing(run, server, raw, how):
    if how == "timeout" and not hasattr(asyncio, "timeout"):
        pytest.skip("asyncio.timeout() exists from Python 3.11 (wait_for covers older ones)")

    async def main():
        async with Client(server.url) as client:
            holder = client.sync.lock("tw")
            await asyncio.get_running_loop().run_in_executor(None, holder.acquire)
            lock = client.lock("tw")
            t0 = time.monotonic()
            with pytest.raises((asyncio.TimeoutError, TimeoutError)):
                if how == "wait_for":
                    await asyncio.wait_for(lock.acquire(), 0.2)
                else:
                    async with asyncio.timeout(0.2):
                        await lock.acquire()
            assert 0.15 < time.monotonic() - t0 < 3
            assert lock.hold_count == 0
            for _ in range(200):
                if numsub(raw, "tw") == 0:
                    break
                await asyncio.sleep(0.01)
            assert numsub(raw, "tw") == 0
            assert raw("HLEN", "tw") == 1  # only the holder's field
    run(main)


def test_timed_acquire_returns_false_and_with_raises_lock_timeout(run, server):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("tt")
            await lock.acquire()

            async def other():
                got = await lock.acquire(timeout=0.2)
                with pytest.raises(redlease.LockTimeout):
                    async with client.lock("tt", timeout=0.1):
                        pass
                return got
            assert await asyncio.create_task(other()) is False
            await lock.release()
    run(main)


def test_cancelled_release_still_releases_then_raises(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("cr")
            done = asyncio.Event()

            async def holder():
                await lock.acquire()
                done.set()
                await lock.release()
            task = asyncio.create_task(holder())
            await done.wait()
            task.cancel()  # lands in release()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert raw("EXISTS", "cr") == 0
    run(main)


def test_a_waiter_is_woken_by_the_release_message(run, server):
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("wake")
            await lock.acquire()  # a 30 s watchdog lease: only the message can wake the waiter
            acquired_at = []

            async def waiter():
                await lock.acquire()
                acquired_at.append(time.monotonic())
                await lock.release()
            task = asyncio.create_task(waiter())
            await asyncio.sleep(0.3)
            released_at = time.monotonic()
            await lock.release()
            await task
            assert acquired_at[0] - released_at < 0.5
    run(main)


def test_reacquire_after_a_release_that_woke_a_subscriber_gives_way_for_the_grace(run, server):
    """A release whose message reached a subscriber makes this client's next waiting acquire of
    the lock leave it to the woken waiter first, as the blocking API does ("Fairness of the plain
    lock" in docs/semantics.md): here the subscriber is a bare connection that never takes the
    lock, so the acquire gives way for the whole grace, then takes it; with handover_grace=0 it
    takes it at once."""
    subscriber = Raw(server.url)
    subscriber("SUBSCRIBE", CHANNEL % "give-way")

    async def reacquire(grace):
        async with Client(server.url, handover_grace=grace) as client:
            lock = client.lock("give-way")
            await lock.acquire()
            await lock.release()  # its message reaches the subscriber
            started = time.monotonic()
            await lock.acquire()
            took = time.monotonic() - started
            await lock.release()
            return took
    try:
        assert run(reacquire, 0.5) >= 0.4
        assert run(reacquire, 0) < 0.4
    finally:
        subscriber.close()


EXCLUSION_CHILD = r"""
import sys, redlease
client = redlease.Client(sys.argv[1])
for _ in range(int(sys.argv[2])):
    with client.lock("ex"):
        with open(sys.argv[3], "a") as f:
            f.write("p+\n")
        with open(sys.argv[3], "a") as f:
            f.write("p-\n")
client.close()
"""


def test_exclusion_between_tasks_threads_and_another_process(run, server, tmp_path):
    log = tmp_path / "log"
    log.write_text("")
    rounds = 30

    def record(who):
        with open(log, "a") as f:
            f.write(f"{who}+\n")
        time.sleep(0.001)
        with open(log, "a") as f:
            f.write(f"{who}-\n")

    async def main():
        async with Client(server.url) as client:
            child = subprocess.Popen([sys.executable, "-c", EXCLUSION_CHILD, server.url,
                                      str(rounds), str(log)])

            def thread_main():
                for _ in range(rounds):
                    with client.sync.lock("ex"):
                        record("t")
            thread = threading.Thread(target=thread_main)
            thread.start()

            async def task(n):
                for _ in range(rounds):
                    async with client.lock("ex"):
                        record(f"a{n}")
                        await asyncio.sleep(0)
            await asyncio.gather(*(task(n) for n in range(3)))
            await asyncio.get_running_loop().run_in_executor(None, thread.join)
            assert await asyncio.get_running_loop().run_in_executor(None, child.wait) == 0
    run(main)
    lines = log.read_text().split()
    assert len(lines) == 2 * rounds * 5
    for enter, leave in zip(lines[::2], lines[1::2]):  # same length: asserted above
        assert enter.endswith("+") and leave == enter[:-1] + "-", "two owners were inside at once"


def test_loss_is_reported_to_async_with_and_to_a_coroutine_on_lost(run, server, raw):
    async def main():
        reports = []
        loop = asyncio.get_running_loop()

        async def on_lost(name, reason):
            reports.append((name, reason, asyncio.get_running_loop() is loop))
        async with Client(server.url, watchdog_timeout=0.6, on_lost=on_lost) as client:
            lock = client.lock("lost")
            with pytest.raises(redlease.LockLostError):
                async with lock:
                    raw("DEL", "lost")
                    for _ in range(300):
                        if lock.lost:
                            break
                        await asyncio.sleep(0.01)
                    assert lock.lost and lock.lost_reason == "deleted"
            for _ in range(100):
                if reports:
                    break
                await asyncio.sleep(0.01)
            assert reports == [("lost", "deleted", True)]
    run(main)


def test_plain_on_lost_runs_on_the_loop_thread(run, server, raw):
    async def main():
        threads = []
        async with Client(server.url, watchdog_timeout=0.6,
                          on_lost=lambda name, reason: threads.append(threading.get_ident())
                          ) as client:
            lock = client.lock("lost2")
            await lock.acquire()
            raw("DEL", "lost2")
            for _ in range(300):
                if threads:
                    break
                await asyncio.sleep(0.01)
            assert threads == [threading.get_ident()]
            with pytest.raises(redlease.LockLostError):
                await lock.release()
    run(main)


def test_the_loop_is_never_blocked_while_many_tasks_wait_and_cycle(run, server):
    async def main():
        async with Client(server.url) as client:
            holder = client.sync
            held = [holder.lock(f"hb:{i}") for i in range(1000)]

            def hold_all():
                for lock in held:
                    lock.acquire()
            await asyncio.get_running_loop().run_in_executor(None, hold_all)
            waiters = [asyncio.create_task(client.lock(f"hb:{i}").acquire())
                       for i in range(1000)]
            stop = False

            async def cycler(i):
                lock = client.lock(f"cycle:{i % 10}")
                n = 0
                while not stop:
                    async with lock:
                        n += 1
                return n
            cyclers = [asyncio.create_task(cycler(i)) for i in range(100)]
            await asyncio.sleep(0.5)  # everyone subscribed and going
            # A loop blocked by redlease would stall in every window; a machine busy with other
            # jobs can preempt the process now and then: up to three windows, one must be clean.
            worst = []
            for _ in range(3):
                gaps = []
                last = time.monotonic()
                end = last + 1.5
                while last < end:
                    await asyncio.sleep(0.001)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
                worst.append(max(gaps))
                if worst[-1] < 0.020:
                    break
            stop = True
            cycles = sum(await asyncio.gather(*cyclers))
            assert not any(w.done() for w in waiters)
            for w in waiters:
                w.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)
            assert cycles > 100
            assert min(worst) < 0.020, f"the loop stalled {[round(w * 1000, 1) for w in worst]} ms"
    run(main)


def test_closing_the_client_ends_waits_with_client_closed(run, server):
    async def main():
        client = Client(server.url)
        lock = client.lock("close")
        await lock.acquire()
        waiters = [asyncio.create_task(client.lock("close").acquire()) for _ in range(5)]
        await asyncio.sleep(0.2)
        await client.close()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert all(isinstance(r, redlease.ClientClosedError) for r in results), results
        with pytest.raises(redlease.ClientClosedError):
            await lock.acquire()
    run(main)


def test_a_task_that_ends_holding_has_its_hold_released(run, server, raw):
    async def main():
        async with Client(server.url) as client:
            async def forgetful():
                await client.lock("forgot").acquire()
            await asyncio.create_task(forgetful())
            for _ in range(300):
                if raw("EXISTS", "forgot") == 0:
                    break
                await asyncio.sleep(0.01)
            assert raw("EXISTS", "forgot") == 0
    run(main)


def test_the_other_kinds(run, server):
    async def main():
        async with Client(server.url) as client:
            fenced = client.fenced_lock("f")
            async with fenced:
                first = fenced.token
            async with fenced:
                assert fenced.token is not None and first is not None and fenced.token > first
            rw = client.rw_lock("rw")

            async def reader():
                async with rw.read:
                    await asyncio.sleep(0.05)
                    return await rw.write.acquire(timeout=0)
            assert await asyncio.gather(reader(), reader()) == [False, False]
            fair = client.fair_lock("fair")
            async with fair:
                assert await fair.locked()
                assert 0 < (await fair.remaining() or 0) <= 30
            assert not await fair.locked()
            lock = client.lock("forced")
            await lock.acquire()
            assert await client.lock("forced").force_unlock() is True
            with pytest.raises(redlease.LockLostError):
                await lock.release()
    run(main)


def test_bad_input_raises_typed_errors(run, server):
    async def main():
        async with Client(server.url) as client:
            with pytest.raises(TypeError):
                client.lock(42)  # type: ignore[arg-type]
            lock = client.lock("bad")
            with pytest.raises(TypeError):
                await lock.acquire(timeout="soon")  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                await lock.acquire(lease=-1)
            with pytest.raises(ValueError):
                await lock.acquire(blocking=False, timeout=3)
            assert lock.hold_count == 0
        with pytest.raises(TypeError):
            Client(server.url, on_lost=3)  # type: ignore[arg-type]
    run(main)


def test_blocking_api_refuses_to_run_on_an_event_loop(run, server):
    async def main():
        client = redlease.Client(server.url)
        try:
            refused = [
                lambda: client.lock("s").acquire(),
                lambda: client.lock("s").__enter__(),
                lambda: client.lock("s").release(),
                lambda: client.semaphore("sem").acquire(),
                lambda: client.permit_expirable_semaphore("pes").acquire(lease=1),
                lambda: client.count_down_latch("cdl").wait(),
                lambda: client.multi_lock(client.lock("m1")).acquire(),
            ]
            for call in refused:
                with pytest.raises(RuntimeError, match="redlease.asyncio"):
                    call()
        finally:
            client.close()
    run(main)
    # off the loop the same calls work
    client = redlease.Client(server.url)
    with client.lock("s"):
        pass
    client.close()


async def wait_subscribed(raw, name, count=1):
    for _ in range(500):
        if numsub(raw, name) == count:
            return
        await asyncio.sleep(0.01)
    assert numsub(raw, name) == count


def stays_free(raw, name, seconds=0.6):
    """Whether the key stays absent for a while (a grant to a dead task would land by then)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if raw("EXISTS", name):
            return False
        time.sleep(0.02)
    return True


def test_a_loop_closed_while_a_task_waits_never_takes_the_lock(new_loop, server, raw):
    # The task is still referenced (it is not garbage): only the loop's closing tells.
    holder, client = redlease.Client(server.url), Client(server.url)
    try:
        holder.lock("closing").acquire()
        loop = new_loop()

        async def start():
            waiter = asyncio.create_task(client.lock("closing").acquire())
            await wait_subscribed(raw, "closing")
            return waiter
        waiter = loop.run_until_complete(start())
        loop.close()
        assert not waiter.done()
        holder.lock("closing").release()
        assert wait_for(lambda: numsub(raw, "closing") == 0)
        assert stays_free(raw, "closing"), raw("HGETALL", "closing")
    finally:
        client.sync.close()
        holder.close()


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the loop is dropped unclosed, on purpose
def test_a_waiting_task_dropped_with_its_stopped_loop_never_takes_the_lock(server, raw):
    # The loop stops with the task waiting; nothing refers to either any more (the client
    # stays): the garbage collector takes them, and the wait must end in the core. (asyncio's
    # loop only: an unclosed uvloop loop keeps itself alive, and its tasks with it.)
    holder, client = redlease.Client(server.url), Client(server.url)
    try:
        holder.lock("dropped").acquire()
        loop = asyncio.new_event_loop()

        async def start():
            asyncio.create_task(client.lock("dropped").acquire())
            await wait_subscribed(raw, "dropped")
        loop.run_until_complete(start())
        del loop
        gc.collect()
        holder.lock("dropped").release()
        assert wait_for(lambda: numsub(raw, "dropped") == 0)
        assert stays_free(raw, "dropped"), raw("HGETALL", "dropped")
    finally:
        client.sync.close()
        holder.close()


def test_holds_of_tasks_left_pending_by_a_closed_loop_are_released(new_loop, server, raw):
    client = Client(server.url)
    try:
        loop = new_loop()

        async def start():
            held = asyncio.Event()

            async def holder():
                await client.lock("stranded").acquire()
                held.set()
                await asyncio.Event().wait()  # never set: still pending when the loop closes
            task = asyncio.create_task(holder())
            await held.wait()
            return task
        task = loop.run_until_complete(start())
        assert raw("EXISTS", "stranded") == 1
        loop.close()
        assert not task.done()
        # The task can never run again: its hold is released (reported as abandoned), not
        # renewed for ever.
        assert wait_for(lambda: raw("EXISTS", "stranded") == 0), raw("HGETALL", "stranded")
    finally:
        client.sync.close()
