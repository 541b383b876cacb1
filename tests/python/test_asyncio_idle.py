"""redlease.asyncio's idle wait (python/redlease/_aio_idle.py): on asyncio's selector loop with
nothing else to run, a call's answer is given inside the call; any other work of the loop (a
ready callback, a socket, a thread's call_soon_threadsafe, a timer) goes first, as it would
without the wait; other loops never wait.

A call that was answered inside itself returns without suspending its task: the tests drive a
coroutine by hand (`drive`) to see whether it suspended."""

import asyncio
import socket
import threading

import pytest

import redlease._aio_idle as aio_idle
from redlease.asyncio import Client

try:
    import uvloop
except ImportError:  # pragma: no cover - the test extras install it
    uvloop = None

FOREIGN_OWNER = "11111111-2222-4333-8444-555555555555:1"


async def drive(coro):
    """Runs `coro` to its end inside the current task: (its result, whether it suspended)."""
    try:
        waiting_on = coro.send(None)
    except StopIteration as stop:
        return stop.value, False
    while True:
        waiting_on._asyncio_future_blocking = False  # taken from `coro`, as a Task takes it
        await waiting_on
        try:
            waiting_on = coro.send(None)
        except StopIteration as stop:
            return stop.value, True


def run_on(factory, fn, *args):
    loop = factory()
    try:
        return loop.run_until_complete(fn(*args))
    finally:
        loop.close()


def test_an_idle_loop_gets_answers_inside_the_calls(server, raw):
    """The default loop and settings: cycles whose calls return without suspending. Without the
    idle wait none could (an answer comes only through the loop's reader), so one is proof;
    the count is in the message."""
    async def main():
        async with Client(server.url) as client:
            lock = client.lock("idle:cycles")
            inside = calls = 0
            for _ in range(50):
                for call in (lock.acquire(), lock.release()):
                    result, suspended = await drive(call)
                    assert result in (True, None)
                    calls += 1
                    inside += not suspended
            assert lock.hold_count == 0 and raw("EXISTS", "idle:cycles") == 0
            return inside, calls

    inside, calls = run_on(asyncio.new_event_loop, main)
    assert inside >= 1, f"{inside} of {calls} calls were answered inside the call"


@pytest.mark.parametrize("case", ["ready callback", "debug mode", "uvloop"])
def test_no_wait_when_the_loop_has_work_or_cannot_be_read(server, case):
    """With a callback ready to run, in debug mode, and on uvloop, every call suspends its task
    and the loop runs as usual: the answer arrives through the reader."""
    if case == "uvloop" and uvloop is None:
        pytest.fail("uvloop is not installed (pip install '.[test]')")

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_debug(case == "debug mode")
        async with Client(server.url) as client:
            lock = client.lock("idle:busy")
            ran = []
            for _ in range(10):
                for call in (lock.acquire(), lock.release()):
                    if case == "ready callback":
                        loop.call_soon(ran.append, 1)
                    result, suspended = await drive(call)
                    assert suspended and result in (True, None)
            return ran

    ran = run_on(uvloop.new_event_loop if case == "uvloop" else asyncio.new_event_loop, main)
    assert len(ran) == (20 if case == "ready callback" else 0)


@pytest.mark.parametrize("event", ["socket", "call_soon_threadsafe", "timer"])
def test_other_events_of_the_loop_end_the_wait(server, raw, monkeypatch, event):
    """An acquire waits for a lock whose foreign holder's lease ends in 1.5 s; meanwhile, 0.2 s
    in, the loop gets an event of its own. Its callback must run before the acquire returns.
    MAX_WAIT is raised to 10 s for this test: at the default 5 ms, a wait that missed the event
    would end on its own and hide the miss."""
    monkeypatch.setattr(aio_idle, "MAX_WAIT", 10.0)
    raw("HSET", "idle:events", FOREIGN_OWNER, 1)
    raw("PEXPIRE", "idle:events", 1500)

    async def main():
        loop = asyncio.get_running_loop()
        order = []
        a, b = socket.socketpair()
        timer = None
        try:
            if event == "socket":
                loop.add_reader(a.fileno(), lambda: order.append(a.recv(1) and "event"))
                timer = threading.Timer(0.2, b.send, (b"x",))
            elif event == "call_soon_threadsafe":
                timer = threading.Timer(0.2, loop.call_soon_threadsafe, (order.append, "event"))
            else:
                loop.call_later(0.2, order.append, "event")
            async with Client(server.url) as client:
                lock = client.lock("idle:events")
                if timer:
                    timer.start()
                assert await lock.acquire(timeout=10)
                order.append("acquired")
                await lock.release()
        finally:
            if timer:
                timer.join()
            if event == "socket":
                loop.remove_reader(a.fileno())
            a.close()
            b.close()
        return order

    assert run_on(asyncio.new_event_loop, main) == ["event", "acquired"]
