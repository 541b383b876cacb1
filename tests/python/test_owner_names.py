"""Who holds a lock, as Python sees it: lock.owner() answers typed Owner objects (blocking and
asyncio) with the holder's client name, the client_name option (and its refusals), and the
name each connection gives Redis (CLIENT LIST)."""

import asyncio
import dataclasses
import os
import socket
import threading

import pytest

import redlease
import redlease.asyncio
from testkit import wait_for

HERE = f"{socket.gethostname()}:{os.getpid()}"  # a client's name when it is given none


def names_in_client_list(raw, client_id):
    listed = raw("CLIENT", "LIST").decode()
    prefix = f"name=redlease:{client_id}:"
    return {field[len(prefix):] for line in listed.splitlines() for field in line.split()
            if field.startswith(prefix)}


def test_owner_is_a_typed_object_with_the_holders_name(make_client):
    holder = make_client(client_name="billing-7")
    lock = holder.lock("orders:9", lease=30)
    assert lock.acquire() and lock.acquire()
    [owner] = make_client().lock("orders:9").owner()
    assert type(owner) is redlease.Owner
    assert owner.client_id == holder.id and owner.count == 2 and owner.name == "billing-7"
    assert owner.field == f"{holder.id}:{redlease._core.current_context()}"
    assert owner.write is False and owner.local is True and 25 < owner.lease <= 30
    assert owner.context == str(redlease._core.current_context())
    with pytest.raises(dataclasses.FrozenInstanceError):
        owner.count = 3  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(redlease.Owner)] == [
        "field", "client_id", "context", "count", "lease", "write", "local", "name"]
    # Unnamed clients are "<host>:<pid>"; client.inspect() has the same name in its dicts.
    plain = make_client()
    rw = plain.rw_lock("doc", lease=30)
    assert rw.write.acquire()
    [writer] = rw.write.owner()
    assert writer.write is True and writer.name == HERE
    assert plain.inspect("doc")["owners"][0]["name"] == HERE
    assert plain.lock("nobody").owner() == []


def test_owner_item_access_still_works_and_is_deprecated(client):
    lock = client.lock("old-style", lease=30)
    assert lock.acquire()
    [owner] = lock.owner()
    with pytest.warns(DeprecationWarning, match=r"use owner.count, not owner\['count'\]"):
        assert owner["count"] == 1
    with pytest.warns(DeprecationWarning), pytest.raises(KeyError):
        owner["nothing"]


def test_a_holder_without_connections_has_no_name(client, raw):
    raw("HSET", "ghost", "00000000-0000-0000-0000-000000000000:1", "1")
    [owner] = client.lock("ghost").owner()
    assert owner.client_id == "00000000-0000-0000-0000-000000000000" and owner.name is None


def test_each_connection_names_itself(make_client, raw):
    named, plain = make_client(client_name="worker-3"), make_client()
    for c in (named, plain):
        assert c.lock("touch", lease=5).acquire(timeout=5)
        c.lock("touch").release()
    assert names_in_client_list(raw, named.id) == {"worker-3"}
    assert names_in_client_list(raw, plain.id) == {HERE}


@pytest.mark.parametrize("bad, words", [
    ("two words", "client_name must be printable ASCII without spaces (as Redis takes in a "
                  "client name): character 4 is not"),
    ("", "client_name must be 1 to 64 characters long"),
    ("x" * 65, "client_name must be 1 to 64 characters long"),
])
def test_bad_client_name_is_refused_with_its_reason(server, bad, words):
    with pytest.raises(ValueError) as e:
        redlease.Client(server.url, client_name=bad)
    assert str(e.value) == words


def test_fair_waiters_show_their_names(make_client):
    holder = make_client()
    fair = holder.fair_lock("fq", lease=30)
    assert fair.acquire()
    waiter = make_client(client_name="queued-1")
    t = threading.Thread(target=lambda: waiter.fair_lock("fq").acquire(timeout=20), daemon=True)
    t.start()
    assert wait_for(lambda: len(holder.inspect("fq")["queue"]) == 1, 10)
    [queued] = holder.inspect("fq")["queue"]
    assert queued["client_id"] == waiter.id and queued["name"] == "queued-1"
    fair.release()
    t.join(20)


def test_asyncio_owner_is_the_same_typed_object(server):
    async def main():
        async with redlease.asyncio.Client(server.url, client_name="async-1") as client:
            lock = client.lock("aio-owner", lease=30)
            assert await lock.owner() == []
            async with lock:
                [owner] = await lock.owner()
                assert type(owner) is redlease.Owner
                assert (owner.client_id, owner.count, owner.name) == (client.id, 1, "async-1")
                assert owner.local is True
    asyncio.run(main())
