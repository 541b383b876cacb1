"""redlease.fencing without a database server: the Redis fenced write, the generic check, the
token counter's cleanup, and FencedWriter's SQL on sqlite3."""

import pickle
import sqlite3

import pytest

from redlease.fencing import FencedWriter, StaleTokenError, check, fenced_set


def test_fenced_set_refuses_an_older_token_and_keeps_the_newer_value(client, make_client, raw):
    old = client.fenced_lock("acct-lock").acquire_token()
    assert fenced_set(client, "acct", "old", old) == 0
    other = make_client()
    assert other.fenced_lock("acct-lock").force_unlock()
    newer = other.fenced_lock("acct-lock").acquire_token()
    assert newer > old
    assert fenced_set(client, "acct", b"newer", newer) == old
    with pytest.raises(StaleTokenError) as refused:
        fenced_set(client, "acct", "old, late", old)
    assert (refused.value.token, refused.value.fence) == (old, newer)
    assert raw("GET", "acct") == b"newer"
    assert raw("GET", "redlease_fence:{acct}") == str(newer).encode()


def test_fenced_set_checks_its_input(client):
    for bad in (0, -1, 2**53 + 1):
        with pytest.raises(ValueError):
            fenced_set(client, "k", "v", bad)
    for bad in (1.0, True, "1"):
        with pytest.raises(TypeError):
            fenced_set(client, "k", "v", bad)
    with pytest.raises(TypeError):
        fenced_set(client, "k", 3, 1)


def test_check_and_the_error():
    check(5, 5)
    check(6, 5)
    with pytest.raises(StaleTokenError) as refused:
        check(4, 5)
    again = pickle.loads(pickle.dumps(refused.value))
    assert (again.token, again.fence, str(again)) == (4, 5, str(refused.value))


def test_force_unlock_advances_the_fence_and_fence_drop_cleans_a_free_name(client, raw):
    lock = client.fenced_lock("gone")
    token = lock.acquire_token()
    assert client._core.fence_drop("gone") == -1  # held: kept
    assert lock.force_unlock()
    assert raw("GET", "redisson_lock_token:{gone}") == str(token + 1).encode()
    assert client._core.fence_drop("gone") == token + 1
    assert raw("EXISTS", "redisson_lock_token:{gone}") == 0


def test_fenced_writer_on_sqlite():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER, b TEXT, v TEXT, fence INTEGER NOT NULL DEFAULT 0, "
               "PRIMARY KEY (a, b))")
    w = FencedWriter("t", key=("a", "b"), paramstyle="qmark")
    w.write(db.cursor(), (1, "x"), {"v": "three"}, 3)
    w.update(db.cursor(), (1, "x"), {"v": "four"}, 4)
    with pytest.raises(StaleTokenError):
        w.update(db.cursor(), (1, "x"), {"v": "three, late"}, 3)
    with pytest.raises(StaleTokenError):
        w.write(db.cursor(), (1, "x"), {"v": "three, late"}, 3)
    assert w.advance(db.cursor(), (1, "x"), 9)
    with pytest.raises(StaleTokenError):
        w.update(db.cursor(), (1, "x"), {"v": "eight"}, 8)
    assert db.execute("SELECT v, fence FROM t").fetchall() == [("four", 9)]


@pytest.mark.parametrize("bad", ['t"; DROP TABLE t; --', "", "a.b.c", "1t"])
def test_fenced_writer_refuses_identifiers_that_are_not_plain(bad):
    with pytest.raises(ValueError):
        FencedWriter(bad)
    with pytest.raises(ValueError):
        FencedWriter("t", fence=bad)


def test_fenced_writer_refuses_writing_the_fence_or_key_itself():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, fence INTEGER NOT NULL DEFAULT 0)")
    w = FencedWriter("t", paramstyle="qmark")
    for values in ({"fence": 1}, {"id": 2}):
        with pytest.raises(ValueError):
            w.write(db.cursor(), 1, values, 1)
    with pytest.raises(ValueError):
        FencedWriter("t", paramstyle="named")


def test_fenced_set_async_from_an_asyncio_client(server, raw):
    import asyncio

    import redlease.asyncio as aredlease
    from redlease.fencing import fenced_set_async

    async def main():
        async with aredlease.Client(server.url) as client:
            lock = client.fenced_lock("a-lock")
            async with lock:
                old = lock.token
            async with lock:
                assert await fenced_set_async(client, "a", "newer", lock.token) == 0
            with pytest.raises(StaleTokenError):
                await fenced_set_async(client, "a", "older", old)
            with pytest.raises(TypeError):
                await fenced_set_async(object(), "a", "x", 1)

    asyncio.run(main())
    assert raw("GET", "a") == b"newer"
