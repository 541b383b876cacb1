"""client.locked(...): a function run by one caller at a time. Every test runs on the blocking
client and on redlease.asyncio's (through a kit that makes the same body a coroutine function),
so that both behave the same."""

import asyncio
import functools
import logging
import threading
import time

import pytest

import redlease
from redlease.asyncio import Client as AsyncClient


class SyncKit:
    def __init__(self, url, **options):
        self.client = redlease.Client(url, **options)

    def locked(self, *args, **kwargs):
        return self.client.locked(*args, **kwargs)

    def call(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def close(self):
        self.client.close()


class AsyncKit:
    """The body stays a plain function; the kit decorates a coroutine function that calls it."""

    def __init__(self, url, **options):
        self.loop = asyncio.new_event_loop()
        self.client = AsyncClient(url, **options)

    def locked(self, *args, **kwargs):
        def decorate(body):
            @functools.wraps(body)  # its signature, for names formatted from the arguments
            async def co(*a, **kw):
                return body(*a, **kw)
            return self.client.locked(*args, **kwargs)(co)
        return decorate

    def call(self, fn, *args, **kwargs):
        return self.loop.run_until_complete(fn(*args, **kwargs))

    def close(self):
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture(params=["sync", "async"])
def kit(request, server):
    made = []

    def make(**options):
        k = (SyncKit if request.param == "sync" else AsyncKit)(server.url, **options)
        made.append(k)
        return k

    yield make
    for k in made:
        k.close()


def test_runs_holding_the_lock_with_the_default_watchdog_lease(kit, raw):
    k = kit()  # the default lease: 30 s, renewed by the watchdog
    seen = []

    @k.locked("nightly")
    def job(x, y=2):
        seen.append((raw("EXISTS", "nightly"), raw("PTTL", "nightly")))
        return x * y

    assert k.call(job, 21) == 42
    assert seen[0][0] == 1 and 20_000 < seen[0][1] <= 30_000
    assert raw("EXISTS", "nightly") == 0  # released when it returned
    assert job.__name__ == "job"


def test_busy_lock_skips_the_call_and_logs_it(kit, make_client, caplog):
    k = kit()
    ran = []

    @k.locked("nightly")
    def job():
        ran.append(1)
        return "ran"

    other = make_client().lock("nightly")
    assert other.acquire()
    with caplog.at_level(logging.INFO, logger="redlease"):
        assert k.call(job) is None
    assert ran == []
    assert any("held by another owner" in r.getMessage() and "job skipped" in r.getMessage()
               for r in caplog.records)
    other.release()
    assert k.call(job) == "ran"


def test_busy_lock_raises_when_asked(kit, make_client):
    k = kit()
    ran = []

    @k.locked("nightly", on_busy="raise")
    def job():
        ran.append(1)

    other = make_client().lock("nightly")
    assert other.acquire()
    with pytest.raises(redlease.LockTimeout, match="nightly"):
        k.call(job)
    assert ran == []


def test_waits_up_to_its_timeout_for_the_lock(kit, make_client):
    k = kit()
    other = make_client().lock("nightly")
    taken = threading.Event()

    def hold_then_release():
        assert other.acquire()
        taken.set()
        time.sleep(0.3)
        other.release()

    t = threading.Thread(target=hold_then_release)
    t.start()
    taken.wait(5)

    @k.locked("nightly", timeout=10)
    def job():
        return "ran"

    start = time.monotonic()
    assert k.call(job) == "ran"  # woken by the release, well before its timeout
    assert 0.2 < time.monotonic() - start < 5
    t.join()


def test_the_name_formatted_from_the_arguments(kit, make_client, raw):
    k = kit()
    names = []

    @k.locked("report:{day}:{kind}")
    def report(day, kind="full"):
        names.append([n.decode() for n in raw("KEYS", "report:*")])
        return day

    other = make_client().lock("report:mon:full")
    assert other.acquire()
    assert k.call(report, "mon") is None  # the default kind="full" is part of the name
    assert k.call(report, "tue") == "tue"
    assert k.call(report, "mon", kind="short") == "mon"
    assert sorted(names[0]) == ["report:mon:full", "report:tue:full"]
    assert sorted(names[1]) == ["report:mon:full", "report:mon:short"]


def test_the_name_from_a_callable(kit, make_client):
    k = kit()

    @k.locked(lambda user, **_: f"user:{user.upper()}")
    def sync_user(user, *, full=False):
        return user

    other = make_client().lock("user:ADA")
    assert other.acquire()
    assert k.call(sync_user, "ada", full=True) is None
    assert k.call(sync_user, "bob") == "bob"


def test_a_field_that_is_no_parameter_is_refused_when_decorating(kit):
    k = kit()
    with pytest.raises(ValueError, match=r"\{dya\} is not a parameter of .*report"):
        @k.locked("report:{dya}")
        def report(day):
            pass


def test_an_exception_releases_the_lock(kit, raw):
    k = kit()

    @k.locked("nightly")
    def job():
        raise KeyError("boom")

    with pytest.raises(KeyError):
        k.call(job)
    assert raw("EXISTS", "nightly") == 0


def test_a_call_longer_than_its_lease_never_runs_twice(kit, make_client):
    # A 1 s lease (the default is 30 s: see the first test) so that the call outlives three
    # leases in 3 s; the watchdog renews it every third of a second.
    k = kit(watchdog_timeout=1)
    runs, tries = [], []
    started, done = threading.Event(), threading.Event()

    @k.locked("long")
    def job():
        runs.append("long")
        started.set()
        time.sleep(3)

    @make_client().locked("long")
    def contender():
        runs.append("contender")
        return "ran"

    def keep_trying():
        started.wait(10)
        while not done.is_set():
            tries.append(contender())
            time.sleep(0.1)

    t = threading.Thread(target=keep_trying)
    t.start()
    try:
        k.call(job)
    finally:
        done.set()
        t.join()
    assert runs == ["long"] and len(tries) > 20 and set(tries) == {None}
    assert contender() == "ran"  # released when the long call returned


def test_a_hold_lost_meanwhile_raises_lock_lost_when_it_returns(kit, raw):
    k = kit(watchdog_timeout=0.9)  # renewed every 0.3 s: the deletion is seen within 0.3 s

    @k.locked("nightly")
    def job():
        raw("DEL", "nightly")  # someone force-unlocked it, or Redis lost it
        time.sleep(0.8)
        return "done"

    with pytest.raises(redlease.LockLostError):
        k.call(job)


def test_each_client_decorates_its_own_kind_of_function(server, make_client):
    client = make_client()

    async def co():
        pass

    with pytest.raises(TypeError, match="redlease.asyncio.Client.locked"):
        client.locked("x")(co)
    aclient = AsyncClient(server.url)
    try:
        with pytest.raises(TypeError, match="redlease.Client.locked"):
            aclient.locked("x")(lambda: None)
    finally:
        asyncio.new_event_loop().run_until_complete(aclient.close())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_bad_options_are_refused_at_once(server, make_client, kind):
    client = make_client() if kind == "sync" else AsyncClient(server.url)
    with pytest.raises(ValueError, match="on_busy"):
        client.locked("x", on_busy="wait")
    with pytest.raises(ValueError, match="timeout"):
        client.locked("x", timeout=-2)
    with pytest.raises(TypeError, match="timeout"):
        client.locked("x", timeout="1")
    with pytest.raises(ValueError, match="empty"):
        client.locked("")
    with pytest.raises(TypeError, match="name"):
        client.locked(42)


def test_a_locked_function_may_call_itself(kit, raw):
    k = kit()  # the lock is reentrant: the caller already holds it

    @k.locked("walk")
    def walk(n):
        holds = int(raw("HVALS", "walk")[0])
        return [holds] if n == 0 else [holds] + walk(n - 1)

    if isinstance(k, AsyncKit):
        @k.client.locked("walk")
        async def awalk(n):
            holds = int(raw("HVALS", "walk")[0])
            return [holds] if n == 0 else [holds] + await awalk(n - 1)
        walk = awalk
    assert k.call(walk, 2) == [1, 2, 3]
    assert raw("EXISTS", "walk") == 0
