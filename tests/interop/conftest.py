"""Fixtures of the interop suite: per module, one throwaway redis-server and one Redisson driver
(a JVM takes about a second to start); per test, a unique lock name, fresh Java threads, and
redlease clients (Python in-process, Lua in lua5.4 processes) that are closed afterwards.

A module can set ``REDISSON_OPTIONS = {"watchdog_ms": ...}`` for its driver."""

import os
import re
import sys

import pytest

from redlease.testing import RedisServer
from testkit import Raw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from luapeer import LuaPeer  # noqa: E402
from redisson import Redisson  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with RedisServer() as s:
        yield s


@pytest.fixture(scope="module")
def raw(server):
    r = Raw(server.url)
    yield r
    r.close()


@pytest.fixture(scope="module")
def redisson(request, server):
    driver = Redisson(server.url, **getattr(request.module, "REDISSON_OPTIONS", {}))
    yield driver
    driver.close()


@pytest.fixture
def java(redisson):
    """The module's Redisson driver; thread names used in this test are new Java threads."""
    redisson.new_scope()
    return redisson


@pytest.fixture
def name(request):
    """A lock name of this test's own."""
    return "interop:" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)


@pytest.fixture
def client(make_client):
    return make_client()


@pytest.fixture
def lua(server):
    """Starts Lua peers on the module's server: lua(watchdog_timeout=None) -> LuaPeer."""
    made = []

    def start(**options):
        peer = LuaPeer(server.url, **options)
        made.append(peer)
        return peer

    yield start
    for peer in made:
        peer.close()
