"""Fixtures for the Python suite (server and raw come from tests/conftest.py)."""

import pytest

import redlease


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
