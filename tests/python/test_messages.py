"""The words a user sees: each message names what went wrong in the user's own terms (the
thread, task or greenlet that owns a hold; a semaphore that was never given permits; a name that
holds a value of another type) and says what to do instead."""

import asyncio
import threading

import pytest

import redlease
from redlease.asyncio import Client as AsyncClient


def in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    return out


def test_release_from_another_thread_names_the_thread_and_hand_off(client):
    lock = client.lock("job:1")
    lock.acquire()
    error = in_thread(lock.release)["error"]
    assert isinstance(error, redlease.NotOwnedError)
    assert str(error).startswith('lock "job:1" is not held by this thread')
    assert "hand_off()" in str(error) and "release(token=" in str(error)
    assert "context" not in str(error)
    lock.release()
    with pytest.raises(redlease.NotOwnedError, match="not held by this thread"):
        lock.release()


def test_release_from_another_task_names_the_task(server):
    async def main():
        async with AsyncClient(server.url) as client:
            lock = client.lock("job:2")
            await lock.acquire()
            with pytest.raises(redlease.NotOwnedError) as info:
                await asyncio.create_task(lock.release())
            assert str(info.value).startswith('lock "job:2" is not held by this task')
            assert "the task that acquired it" in str(info.value)
            assert "context" not in str(info.value)
            await lock.release()
    asyncio.run(main())


def test_a_multi_lock_not_held_names_the_thread(client):
    multi = client.multi_lock(client.lock("m:1"), client.lock("m:2"))
    with pytest.raises(redlease.NotOwnedError, match="the multi-lock is not held by this thread"):
        multi.release()


def test_a_semaphore_never_given_permits_says_how_to_set_them(client, raw):
    sem = client.semaphore("upstream", timeout=0.1)
    with pytest.raises(redlease.LockTimeout) as info:
        with sem:
            pass
    words = str(info.value)
    assert 'semaphore "upstream" has no permits (it does not exist)' in words
    assert "try_set_permits" in words and "add_permits" in words
    assert raw("EXISTS", "upstream") == 0
    sem.try_set_permits(1)
    with sem:  # once set, it works; none free is said so
        with pytest.raises(redlease.LockTimeout,
                           match='semaphore "upstream": 1 permit\\(s\\) not free within 0.100 s'):
            with sem:
                pass


def test_a_permit_expirable_semaphore_never_given_permits_says_so(client):
    sem = client.permit_expirable_semaphore("pool")
    with pytest.raises(redlease.LockTimeout) as info:
        with sem.permit(lease=5, timeout=0.1):
            pass
    assert 'semaphore "pool" has no permits (it does not exist)' in str(info.value)
    assert "try_set_permits" in str(info.value)


def test_wrong_type_names_the_name_and_its_type(client, raw):
    raw("SET", "orders:42", "x")
    with pytest.raises(redlease.ServerError) as info:
        client.lock("orders:42").acquire(timeout=0)
    words = str(info.value)
    assert words.startswith('"orders:42" holds a value of another type (string); redlease needs '
                            'it for a lock')
    assert "user_script" not in words and "EVALSHA" not in words
    raw("RPUSH", "sem:list", "a")
    with pytest.raises(redlease.ServerError,
                       match=r'"sem:list" holds a value of another type \(list\); redlease needs '
                             r'it for a semaphore'):
        client.semaphore("sem:list").try_set_permits(1)


def test_sync_semaphore_in_a_coroutine_speaks_of_the_loop_not_an_owner(server):
    async def main():
        client = redlease.Client(server.url)
        try:
            sem = client.semaphore("sem")
            sem.try_set_permits(1)
            # Permits are the client's: one try has no owner problem and does not wait.
            assert sem.acquire(timeout=0) is True
            sem.release()
            with pytest.raises(RuntimeError) as info:
                sem.acquire()  # a wait would block the loop
            words = str(info.value)
            assert "would block the event loop" in words
            assert "owner" not in words and "thread" not in words
            assert "redlease.asyncio" in words and "semaphore()" in words
        finally:
            client.close()
    asyncio.run(main())


def test_sync_multi_lock_in_a_coroutine_points_to_the_async_one(server):
    async def main():
        client = redlease.Client(server.url)
        try:
            with pytest.raises(RuntimeError) as info:
                client.multi_lock(client.lock("m1"), client.lock("m2")).acquire()
            words = str(info.value)
            assert "would block the event loop" in words
            assert "redlease.asyncio's Client.multi_lock()" in words
            with pytest.raises(RuntimeError, match=r"redlease.asyncio's Client.lock\(\)"):
                client.lock("m1").acquire()
        finally:
            client.close()
    asyncio.run(main())
