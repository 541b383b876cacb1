"""RedLock over three throwaway servers: Redisson's RedissonRedLock (one RedissonClient per
server, in one JVM) and redlease's red_lock exclude each other; with one server stopped redlease
still takes a majority, with two it takes none and leaves nothing behind."""

import pytest

import redlease
from redisson import Redisson
from redlease.testing import RedisServer
from testkit import Raw

LEASE_MS = 20_000


@pytest.fixture(scope="module")
def servers():
    made = [RedisServer().start() for _ in range(3)]
    yield made
    for s in made:
        s.close()


@pytest.fixture(scope="module")
def java(servers):
    driver = Redisson(servers[0].url, also=[s.url for s in servers[1:]])
    yield driver
    driver.close()


def held_on(server, name):
    raw = Raw(server.url)
    try:
        return raw("EXISTS", name) == 1
    finally:
        raw.close()


def test_redisson_redlock_and_redlease_red_lock(servers, java, make_client):
    clients = [make_client(s.url, command_timeout=0.5) for s in servers]
    red = redlease.red_lock(*(c.lock("red") for c in clients), lease=10)
    jred = java.object("red", "red")
    jred.call("t0", "lock", LEASE_MS)  # Redisson's RedLock: on all three servers
    assert all(held_on(s, "red") for s in servers)
    assert red.acquire(timeout=0) is False
    assert red.acquire(timeout=0.5) is False
    assert red.held == 0
    jred.call("t0", "unlock")
    assert not any(held_on(s, "red") for s in servers)
    with red:
        assert red.held == 3
        assert jred.call("t1", "tryLock", 0) is False  # no majority left for Java
    assert not any(held_on(s, "red") for s in servers)
    assert jred.call("t1", "tryLock", 0) is True
    jred.call("t1", "unlock")

    servers[2].stop()  # one of three down: a majority is still there
    with red:
        assert red.held == 2
        assert held_on(servers[0], "red") and held_on(servers[1], "red")
    assert not held_on(servers[0], "red") and not held_on(servers[1], "red")
    servers[1].stop()  # two of three down: no majority
    assert red.acquire(timeout=0) is False
    assert red.acquire(timeout=0.5) is False
    assert red.held == 0 and not held_on(servers[0], "red")
