"""How long a holder still holds its lock, on its own clock: valid_for(), deadline, check(), and
the in-doubt state between held and lost (docs/semantics.md, "Knowing how long you hold it")."""

import asyncio
import os
import signal
import threading
import time

import pytest

import redlease
import redlease.asyncio


class StateRecorder:
    """on_state(name, state, why), with the time each change arrived."""

    def __init__(self):
        self.calls = []
        self.changed = threading.Condition()

    def __call__(self, name, state, why):
        with self.changed:
            self.calls.append((name, state, why, time.monotonic()))
            self.changed.notify_all()

    def states(self):
        return [c[1] for c in self.calls]

    def wait_for(self, state, timeout):
        with self.changed:
            return self.changed.wait_for(lambda: state in self.states(), timeout)

    def at(self, state):
        return next(c[3] for c in self.calls if c[1] == state)


def test_a_hold_is_guaranteed_for_its_lease_less_the_drift_margin(make_client):
    client = make_client()
    lock = client.lock("v", lease=10)
    assert lock.valid_for() == 0.0 and lock.deadline == 0.0 and not lock.in_doubt
    sent = time.monotonic()
    with lock:
        done = time.monotonic()
        # 10 s from the acquire's sending, less 1% + 2 ms
        assert sent + 10 - 0.102 - 0.002 <= lock.deadline <= done + 10 - 0.102 + 0.002
        assert 9.7 < lock.valid_for() <= 9.898
        assert lock.check(min_left=5) == pytest.approx(lock.valid_for(), abs=0.05)
        with pytest.raises(redlease.LockInDoubtError, match="less than the 11000 ms asked"):
            lock.check(min_left=11)
        assert not lock.in_doubt
    assert lock.valid_for() == 0.0 and lock.deadline == 0.0
    with pytest.raises(redlease.NotOwnedError):
        lock.check()


def test_another_thread_holds_nothing_guaranteed(make_client):
    client = make_client()
    lock = client.lock("v:thread")
    seen = []
    with lock:
        t = threading.Thread(target=lambda: seen.append((lock.valid_for(), lock.deadline)))
        t.start()
        t.join()
    assert seen == [(0.0, 0.0)]


def test_valid_for_never_exceeds_the_lease_redis_keeps(make_client, raw):
    client = make_client(watchdog_timeout=1.5)  # renewed every 0.5 s: several renewals below
    lock = client.lock("v:truth")
    guaranteed = 0
    with lock:
        for _ in range(30):
            deadline = lock.deadline
            expires = time.monotonic() + raw("PTTL", "v:truth") / 1000
            assert deadline <= expires
            guaranteed += deadline > 0
            time.sleep(0.05)
    assert guaranteed >= 25  # (a renewal that a loaded machine delays may leave a sample at 0)


def test_drift_factor_sets_the_margin_and_is_checked(make_client):
    client = make_client(drift_factor=0.5)
    lock = client.lock("v:drift", lease=2)
    with lock:
        assert 0.9 < lock.valid_for() <= 0.998
    for bad in (-0.1, 0.6, float("nan")):
        with pytest.raises(ValueError, match="drift_factor"):
            make_client(drift_factor=bad)


def test_a_paused_server_puts_the_hold_in_doubt_then_held_again(make_client, server):
    states = StateRecorder()
    # A 3 s lease renewed every second, each call cut at 1 s: a 2 s pause fails a round but
    # leaves the lease (the defaults would need a 10 s pause for the same story).
    client = make_client(watchdog_timeout=3, command_timeout=1, on_state=states)
    lock = client.lock("v:doubt")
    with lock:
        paused = time.monotonic()
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            assert states.wait_for("in_doubt", 3.0)
            assert lock.in_doubt
            with pytest.raises(redlease.LockInDoubtError, match="in doubt"):
                lock.check()
            still = lock.valid_for()
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        assert states.wait_for("held", 3.0)
        assert not lock.in_doubt and lock.check(min_left=1.5) > 1.5
        assert client.stats()["in_doubt_total"] == 1 and client.stats()["in_doubt"] == 0
    assert states.states() == ["in_doubt", "held"]
    assert still > 0  # in doubt, yet still guaranteed for a while
    print(f"\n    paused at 0 s: in doubt at +{states.at('in_doubt') - paused:.2f} s, "
          f"held again at +{states.at('held') - paused:.2f} s")


def test_a_pause_past_the_deadline_warns_in_doubt_then_lost(make_client, server, caplog):
    states = StateRecorder()
    client = make_client(watchdog_timeout=1.5, command_timeout=0.5, on_state=states)
    lock = client.lock("v:lost")
    lock.acquire()
    deadline = lock.deadline
    paused = time.monotonic()
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        assert states.wait_for("lost", 4.0)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert states.states() == ["in_doubt", "lost"]
    assert states.at("in_doubt") < deadline <= states.at("lost")
    with pytest.raises(redlease.LockLostError) as lost:
        lock.check()
    assert lost.value.reason == "unreachable"
    assert lock.valid_for() == 0.0
    assert any("in doubt" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    with pytest.raises(redlease.LockLostError):
        lock.release()
    print(f"\n    paused at 0 s: in doubt at +{states.at('in_doubt') - paused:.2f} s, guaranteed "
          f"until +{deadline - paused:.2f} s, lost at +{states.at('lost') - paused:.2f} s")


def test_asyncio_deadline_bounds_the_body_with_timeout_at(server):
    async def main():
        async with redlease.asyncio.Client(server.url) as client:
            lock = client.lock("v:aio", lease=0.5)
            async with lock:
                assert 0.3 < lock.valid_for() <= 0.5
                assert lock.check(min_left=0.2) > 0.2
                assert lock.deadline == pytest.approx(time.monotonic() + lock.valid_for(), abs=0.05)
                # the body outlives the guarantee: cut short at the deadline (timeout_at from
                # Python 3.11; wait_for up to it before)
                with pytest.raises((TimeoutError, asyncio.TimeoutError)):
                    if hasattr(asyncio, "timeout_at"):
                        async with asyncio.timeout_at(lock.deadline):
                            await asyncio.sleep(5)
                    else:
                        await asyncio.wait_for(asyncio.sleep(5),
                                               lock.deadline - time.monotonic())
                assert lock.valid_for() == 0.0
                # within the drift margin of the lease's end, then past it
                with pytest.raises((redlease.LockInDoubtError, redlease.LockLostError)):
                    lock.check()
                await asyncio.sleep(0.1)
            return "done"

    with pytest.raises(redlease.LockLostError):  # released after its lease ran out
        asyncio.run(main())


def test_guarded_body_is_cancelled_when_the_hold_is_lost(server, raw):
    async def main():
        async with redlease.asyncio.Client(server.url, watchdog_timeout=1.5) as client:
            lock = client.lock("v:guard")
            reached = []
            with pytest.raises(redlease.LockLostError) as lost:
                async with lock.guarded():
                    raw("DEL", "v:guard")  # someone force-unlocks it
                    for _ in range(50):  # a body that would write for 5 s
                        await asyncio.sleep(0.1)
                        reached.append(1)
            return lost.value.reason, len(reached)

    reason, steps = asyncio.run(main())
    assert reason == "deleted"
    assert steps < 15  # cut within a renewal period (0.5 s) and a margin, not after 5 s


def test_guarded_body_is_cut_at_the_deadline_of_a_fixed_lease(server):
    async def main():
        async with redlease.asyncio.Client(server.url) as client:
            lock = client.lock("v:guard:lease", lease=0.4)
            start = time.monotonic()
            with pytest.raises((redlease.LockInDoubtError, redlease.LockLostError)):
                async with lock.guarded():
                    await asyncio.sleep(5)
            return time.monotonic() - start

    took = asyncio.run(main())
    assert 0.3 < took < 2.0


def test_guarded_body_that_ends_in_time_releases_normally(server, raw):
    async def main():
        async with redlease.asyncio.Client(server.url, watchdog_timeout=1.5) as client:
            lock = client.lock("v:guard:ok")
            async with lock.guarded():
                await asyncio.sleep(1.2)  # across two renewals
                assert raw("EXISTS", "v:guard:ok") == 1
            assert raw("EXISTS", "v:guard:ok") == 0
            task = asyncio.current_task()
            return task.cancelling() if hasattr(task, "cancelling") else 0

    assert asyncio.run(main()) == 0


def test_guarded_body_keeps_running_while_only_in_doubt(server):
    states = StateRecorder()

    async def main():
        async with redlease.asyncio.Client(server.url, watchdog_timeout=3, command_timeout=1,
                                           on_state=states) as client:
            lock = client.lock("v:guard:doubt")
            async with lock.guarded():
                os.kill(server.process.pid, signal.SIGSTOP)
                try:
                    while "in_doubt" not in states.states():
                        await asyncio.sleep(0.05)
                finally:
                    os.kill(server.process.pid, signal.SIGCONT)
                while "held" not in states.states():
                    await asyncio.sleep(0.05)
            return states.states()

    assert asyncio.run(main()) == ["in_doubt", "held"]
