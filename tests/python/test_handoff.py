"""Hand-off: a hold turned into a token (as redis-py's token=) and released by another thread or
process; refused for a forged token, a spent one, and a token of another kind of lock."""

import subprocess
import sys
import threading

import pytest

import redlease

RELEASE_BY_TOKEN = """
import sys, redlease
c = redlease.Client(sys.argv[1])
try:
    c.lock(sys.argv[2]).release(token=sys.argv[3])
except redlease.NotOwnedError as e:
    print("refused:", e)
    sys.exit(3)
"""


def release_elsewhere(url, name, token):
    return subprocess.run([sys.executable, "-c", RELEASE_BY_TOKEN, url, name, token],
                          capture_output=True, text=True, timeout=60)


def test_another_thread_releases_with_the_token(client, raw):
    lock = client.lock("job", lease=30)
    assert lock.acquire()
    token = lock.hand_off()
    assert token == f"{client.id}:{redlease._core.current_context()}"
    assert lock.hold_count == 0
    with pytest.raises(redlease.NotOwnedError):
        lock.release()  # no longer this thread's
    assert raw("EXISTS", "job") == 1
    done = []
    t = threading.Thread(target=lambda: done.append(client.lock("job").release(token=token)))
    t.start()
    t.join()
    assert done == [None]
    assert raw("EXISTS", "job") == 0


def test_another_process_releases_with_the_token(client, raw, server):
    lock = client.lock("job")  # watchdog mode: renewal stops with the hand-off
    lock.acquire()
    lock.acquire()
    token = lock.hand_off()
    assert client.stats()["holds"] == 0
    result = release_elsewhere(server.url, "job", token)
    assert result.returncode == 0, result.stdout + result.stderr
    assert raw("EXISTS", "job") == 0  # both holds went
    assert client.stats()["lost_total"] == 0  # handed off, not lost


def test_forged_and_spent_tokens_are_refused(client, raw, server):
    lock = client.lock("job", lease=30)
    assert lock.acquire()
    token = lock.hand_off()
    forged = token[:-1] + str((int(token[-1]) + 1) % 10)
    result = release_elsewhere(server.url, "job", forged)
    assert result.returncode == 3 and "refused" in result.stdout
    assert raw("EXISTS", "job") == 1
    lock.release(token=token)
    assert raw("EXISTS", "job") == 0
    with pytest.raises(redlease.NotOwnedError):
        lock.release(token=token)  # spent


def test_token_after_the_holder_released_is_refused(client, raw):
    holder = client.lock("job", lease=30)
    assert holder.acquire()
    token = holder.hand_off()
    client.lock("job").release(token=token)
    other = client.lock("job", lease=30)
    assert other.acquire()  # taken again, by the same thread: a new hold
    with pytest.raises(redlease.NotOwnedError):
        client.lock("job").release(token=token + "0")
    other.release()


def test_hand_off_needs_a_hold_and_tokens_are_checked(client, raw):
    lock = client.lock("job", lease=30)
    with pytest.raises(redlease.NotOwnedError):
        lock.hand_off()
    for bad in ("", "nonsense", "x" * 200, f"{client.id}:1:write"):
        with pytest.raises(ValueError):
            lock.release(token=bad)
    with pytest.raises(TypeError):
        lock.release(token=b"bytes")  # type: ignore[arg-type]
    rw = client.rw_lock("doc", lease=30)
    assert rw.write.acquire()
    token = rw.write.hand_off()
    assert token.endswith(":write")
    with pytest.raises(ValueError):
        rw.read.release(token=token)  # a write token on the read side
    rw.write.release(token=token)
    assert raw("EXISTS", "doc") == 0


def test_read_and_fair_holds_hand_off_too(client, make_client, raw):
    other = make_client()
    rw = client.rw_lock("doc", lease=30)
    assert rw.read.acquire() and rw.read.acquire()
    token = rw.read.hand_off()
    assert client.inspect("doc")["owners"][0]["local"] is False  # no longer this client's
    other.rw_lock("doc").read.release(token=token)
    assert raw("EXISTS", "doc") == 0
    fair = client.fair_lock("line", lease=30)
    assert fair.acquire()
    other.fair_lock("line").release(token=fair.hand_off())
    assert raw("EXISTS", "line") == 0
