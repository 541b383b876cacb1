"""What redlease writes to Redis is Redisson's RLock layout (docs/protocol.md), read by a plain
client."""

import threading

import redlease
from testkit import Raw


def test_hash_field_is_client_id_and_thread(client, raw):
    lock = client.lock("orders:42")
    with lock:
        assert raw("TYPE", "orders:42") == "hash"
        owner = f"{client.id}:{redlease._core.current_context()}".encode()
        assert raw("HGETALL", "orders:42") == [owner, b"1"]
        with lock:
            assert raw("HGET", "orders:42", owner) == b"2"
        assert raw("HGET", "orders:42", owner) == b"1"
        assert 29000 < raw("PTTL", "orders:42") <= 30000
    assert raw("EXISTS", "orders:42") == 0


def test_threads_have_distinct_contexts(client):
    seen = []
    t = threading.Thread(target=lambda: seen.append(redlease._core.current_context()))
    t.start()
    t.join()
    assert seen[0] != redlease._core.current_context()


def test_release_publishes_on_the_redisson_channel(client, raw, server):
    sub = Raw(server.url)
    assert sub("SUBSCRIBE", "redisson_lock__channel:{orders:42}")[0] == b"subscribe"
    lock = client.lock("orders:42")
    lock.acquire()
    lock.release()
    assert sub._read() == [b"message", b"redisson_lock__channel:{orders:42}", b"0"]
    sub.close()


def test_a_hash_written_as_redisson_does_excludes_redlease(client, raw):
    # A Java thread holding it: field "<uuid>:<thread id>", count 1, 30 s expiry.
    raw("HSET", "java-held", "0f0e2c1a-0000-4000-8000-000000000001:77", 1)
    raw("PEXPIRE", "java-held", 30000)
    lock = client.lock("java-held")
    assert lock.locked()
    assert not lock.acquire(timeout=0)
    assert 0 < lock.remaining() <= 30.0
    raw("DEL", "java-held")
    assert lock.acquire(timeout=0)
    lock.release()
