"""Fixtures for the fault-injection suite: a FaultProxy in front of the test's redis-server, and
clients with short timeouts (the server, make_client and the on_lost recorder are the shared
ones of tests/conftest.py)."""

import os
import sys

import pytest

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


@pytest.fixture
def make_client(make_client):
    """The shared make_client, with this suite's short timeouts and watchdog unless given."""
    def make(url=None, **options):
        return make_client(url, **{**TIMEOUTS, "watchdog_timeout": WATCHDOG, **options})
    return make
