"""Replica sync (sync_replicas): WAIT after lock writes, against a real replica."""

import logging
import os
import signal
import time

import pytest

import redlease
from redlease.testing import RedisServer
from testkit import Raw, wait_for


def connected_replicas(raw):
    return len(raw("ROLE")[2])



@pytest.fixture
def replica(server, raw):
    with RedisServer(extra_args=["--replicaof", "127.0.0.1", str(server.port)]) as r:
        assert wait_for(lambda: connected_replicas(raw) == 1, 10)
        yield r


def test_sync_with_a_live_stalled_and_stopped_replica(server, raw, replica, make_client, caplog):
    caplog.set_level(logging.WARNING, logger="redlease")
    c = make_client(server.url, sync_replicas=1, sync_timeout=1.5,
                    watchdog_timeout=4.0)  # wide: a loaded machine lags
    lock = c.lock("synced")
    on_replica = Raw(replica.url)
    with lock:
        assert on_replica("EXISTS", "synced") == 1  # acquire returned once the replica had it
    assert on_replica("EXISTS", "synced") == 0

    os.kill(replica.process.pid, signal.SIGSTOP)  # connected, but acknowledges nothing
    try:
        start = time.monotonic()
        with pytest.raises(redlease.ReplicaSyncError, match="no replica acknowledged"):
            lock.acquire(timeout=0)
        assert time.monotonic() - start >= 1.4
        assert raw("EXISTS", "synced") == 0  # taken back on the master
        assert lock.hold_count == 0
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)
    on_replica.close()

    replica.stop()  # no replica connected: nothing to wait for
    assert wait_for(lambda: connected_replicas(raw) == 0, 10)
    assert lock.acquire(timeout=0)
    assert raw("EXISTS", "synced") == 1
    lock.release()


def test_unacknowledged_release_is_done_and_logged(server, raw, replica, make_client, caplog):
    caplog.set_level(logging.WARNING, logger="redlease")
    c = make_client(server.url, sync_replicas=1, sync_timeout=1.5,
                    watchdog_timeout=4.0)  # wide: a loaded machine lags
    lock = c.lock("release-unsynced")
    lock.acquire()
    os.kill(replica.process.pid, signal.SIGSTOP)
    try:
        lock.release()  # released on the master: no error, a warning
        assert raw("EXISTS", "release-unsynced") == 0
        assert wait_for(lambda: any("not acknowledged by any replica" in r.message
                                      and r.levelno == logging.WARNING for r in caplog.records),
                          6)
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)


@pytest.mark.parametrize("options, exc", [
    ({"sync_replicas": -1}, ValueError),
    ({"sync_replicas": "1"}, TypeError),
    ({"sync_replicas": 1, "sync_timeout": 0}, ValueError),
    ({"sync_replicas": 1, "sync_timeout": 2.0, "watchdog_timeout": 2.0}, ValueError),
])
def test_bad_sync_options(server, options, exc):
    with pytest.raises(exc):
        redlease.Client(server.url, **options)
