"""sync_aof from Python: the option reaches the core, which refuses a server that cannot wait for
its append-only file before anything is written (tests/c/test_waitaof.c runs the waits
themselves against Valkey)."""

import pytest

import redlease


def test_sync_aof_on_a_server_that_cannot_raises_and_writes_nothing(make_client, raw):
    # The suite's server keeps its default appendonly no: Redis 7.0 has no WAITAOF at all, a
    # newer one refuses WAITAOF without an append-only file. Either way: refused, named.
    client = make_client(sync_aof=True)
    with pytest.raises(ValueError, match="sync_aof needs"):
        client.lock("aof:py").acquire(timeout=0)
    assert raw("EXISTS", "aof:py") == 0


def test_sync_aof_is_a_flag_and_needs_a_sync_timeout_below_the_lease():
    with pytest.raises(ValueError, match="sync_timeout must be shorter"):
        redlease.Client("redis://127.0.0.1:1", sync_aof=True, sync_timeout=30, watchdog_timeout=30)
