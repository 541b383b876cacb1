"""Fixtures for the Python suite, and the `N passed, N failed` line that `make test` adds up."""

import os
import sys

import pytest

import redlease
from redlease.testing import RedisServer

sys.path.insert(0, os.path.dirname(__file__))
from resp import Raw  # noqa: E402


@pytest.fixture
def server():
    with RedisServer() as s:
        yield s


@pytest.fixture
def raw(server):
    r = Raw(server.url)
    yield r
    r.close()


@pytest.fixture
def client(server):
    c = redlease.Client(server.url)
    yield c
    c.close()


@pytest.fixture
def make_client(server):
    """Clients on the test's server with any options; all closed after the test."""
    made = []

    def make(**options):
        c = redlease.Client(server.url, **options)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
