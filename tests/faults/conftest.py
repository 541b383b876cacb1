"""Fixtures for the fault-injection suite: a redis-server, a FaultProxy in front of it, clients
that go through the proxy with short timeouts, and an on_lost recorder."""

import os
import sys
import threading

import pytest

import redlease

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from proxy import FaultProxy  # noqa: E402

# Short enough to keep the suite fast, long enough for a loaded 2-core CI machine.
WATCHDOG = 1.2          # lease in watchdog mode; renewed every 0.4 s
PERIOD = WATCHDOG / 3
TIMEOUTS = {"connect_timeout": 0.25, "command_timeout": 0.25}


@pytest.fixture
def proxy(server):
    p = FaultProxy(server.port)
    yield p
    p.close()


class LostRecorder:
    """on_lost callback that remembers (name, reason, when) and lets a test wait for it."""

    def __init__(self):
        self.calls = []
        self.event = threading.Event()

    def __call__(self, name, reason):
        import time
        self.calls.append((name, reason, time.monotonic()))
        self.event.set()

    def wait(self, timeout):
        return self.event.wait(timeout)


@pytest.fixture
def lost():
    return LostRecorder()


@pytest.fixture
def make_client():
    made = []

    def make(url, **options):
        opts = dict(TIMEOUTS, watchdog_timeout=WATCHDOG)
        opts.update(options)
        c = redlease.Client(url, **opts)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
