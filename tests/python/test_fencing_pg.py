"""Fencing checked by a real PostgreSQL (redlease.fencing.FencedWriter): a holder paused past its
lease wakes up and writes with its old token; PostgreSQL refuses it and the newer holder's write
stands. The database is started by the test (tests/python/pgkit.py)."""

import os
import signal
import subprocess
import sys

import psycopg
import pytest
from pgkit import Postgres

from redlease.fencing import FencedWriter, StaleTokenError

HOLDER = os.path.join(os.path.dirname(__file__), "fenced_holder.py")


@pytest.fixture(scope="module")
def pg():
    p = Postgres()
    yield p
    p.stop()


@pytest.fixture
def db(pg):
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS ledger")
        conn.execute("CREATE TABLE ledger (id int PRIMARY KEY, owner text, "
                     "fence bigint NOT NULL DEFAULT 0)")
        conn.execute("INSERT INTO ledger (id, owner) VALUES (1, 'nobody')")
        yield conn


def row(db):
    return db.execute("SELECT owner, fence FROM ledger WHERE id = 1").fetchone()


def test_a_paused_holders_late_write_is_refused_and_the_newer_one_stands(pg, db, server,
                                                                          make_client):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    holder = subprocess.Popen([sys.executable, HOLDER, server.url, pg.dsn, "ledger"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        old = int(holder.stdout.readline())
        holder.stdin.write("old holder, in time\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "written"
        assert row(db) == ("old holder, in time", old)

        os.kill(holder.pid, signal.SIGSTOP)  # a long pause: its watchdog stops with it
        try:
            newer = make_client().fenced_lock("ledger")
            token = newer.acquire_token(timeout=15)  # once the paused holder's 1 s lease ran out
            assert token is not None and token > old
            FencedWriter("ledger").update(db.cursor(), 1, {"owner": "newer holder"}, token)
        finally:
            os.kill(holder.pid, signal.SIGCONT)
        holder.stdin.write("old holder, woken up\n")  # it still believes it holds the lock
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "stale"
        assert row(db) == ("newer holder", token)
        newer.release()
    finally:
        holder.stdin.close()
        holder.wait(15)


def test_force_unlock_fences_the_evicted_holder_out_at_once(db, make_client):
    """No newer holder writes: the operator's forced release advances the fence, and telling
    the table its new value (FencedWriter.advance) refuses the evicted holder from then on."""
    client = make_client()
    writer = FencedWriter("ledger")
    evicted = client.fenced_lock("ledger")
    token = evicted.acquire_token()
    writer.update(db.cursor(), 1, {"owner": "evicted"}, token)
    operator = make_client()
    assert operator.fenced_lock("ledger").force_unlock()
    fence = operator.inspect("ledger")["last_token"]
    assert fence == token + 1
    assert writer.advance(db.cursor(), 1, fence)
    with pytest.raises(StaleTokenError) as refused:
        writer.update(db.cursor(), 1, {"owner": "evicted, late"}, token)
    assert refused.value.token == token
    assert row(db) == ("evicted", fence)
    assert not writer.advance(db.cursor(), 1, fence)  # already there


def test_upsert_inserts_then_refuses_an_older_token(db):
    writer = FencedWriter("ledger")
    writer.write(db.cursor(), 2, {"owner": "seven"}, 7)
    writer.write(db.cursor(), 2, {"owner": "seven again"}, 7)  # the same hold writes again
    with pytest.raises(StaleTokenError):
        writer.write(db.cursor(), 2, {"owner": "five"}, 5)
    assert db.execute("SELECT owner, fence FROM ledger WHERE id = 2").fetchone() == (
        "seven again", 7)


def test_asyncio_holder_with_an_async_driver(pg, db, server):
    """The asyncio flavour: a fenced lock from redlease.asyncio and psycopg's async cursor."""
    import asyncio

    import redlease.asyncio as aredlease

    async def main():
        async with aredlease.Client(server.url) as client:
            lock = client.fenced_lock("ledger")
            writer = FencedWriter("ledger")
            async with await psycopg.AsyncConnection.connect(pg.dsn, autocommit=True) as conn:
                async with lock:
                    old = lock.token
                async with lock:
                    token = lock.token
                    await writer.update_async(conn.cursor(), 1, {"owner": "async"}, token)
                with pytest.raises(StaleTokenError):
                    await writer.update_async(conn.cursor(), 1, {"owner": "older"}, old)
            return token

    token = asyncio.run(main())
    assert row(db) == ("async", token)
