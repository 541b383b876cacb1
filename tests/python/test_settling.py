"""When this client's view and Redis disagree (a release or an acquire whose answer was lost, a
thread that ended while holding), redlease settles it: every hold it reports is renewed, nothing
is left in Redis that shuts others out, and what happened is logged."""

import logging
import socket
import threading
import time

import pytest

import redlease
from testkit import wait_for


def stall(server, seconds):
    """Sends DEBUG SLEEP on a connection of its own; returns a function that waits it out."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$%d\r\n%s\r\n"
                 % (len(str(seconds)), str(seconds).encode()))
    time.sleep(0.05)  # asleep from here on

    def done():
        sock.settimeout(10)
        assert sock.recv(64).startswith(b"+OK")
        sock.close()
    return done


def test_with_after_a_failed_release_is_renewed_and_exclusive(make_client, server, raw):
    worker = make_client(watchdog_timeout=1.5, command_timeout=0.3)
    other = make_client()
    lock = worker.lock("orders:42")
    lock.acquire()
    done = stall(server, 1)
    with pytest.raises(redlease.ConnectionError):
        lock.release()  # timed out; Redis runs it when it wakes
    done()
    assert raw("EXISTS", "orders:42") == 0
    with lock:
        time.sleep(2.5)  # well past the 1.5 s lease: only renewals keep it
        assert not other.lock("orders:42").acquire(timeout=0)
        assert not lock.lost
    assert raw("EXISTS", "orders:42") == 0


def test_acquire_whose_answer_was_lost_does_not_shut_others_out(make_client, server, raw):
    worker = make_client(watchdog_timeout=1.5, command_timeout=0.3)
    other = make_client().lock("job")
    lock = worker.lock("job")
    with lock:
        pass
    done = stall(server, 1)
    with pytest.raises(redlease.ConnectionError):
        lock.acquire()  # timed out; Redis grants it when it wakes
    done()
    assert raw("EXISTS", "job") == 1 and lock.hold_count == 0
    for _ in range(3):
        with lock:
            pass
        assert other.acquire(timeout=0)
        other.release()


def test_stray_holds_are_released_with_a_warning(make_client, raw, caplog):
    client = make_client()
    lock = client.lock("stray")
    with lock:
        field = raw("HKEYS", "stray")[0]
    raw("HINCRBY", "stray", field, 1)  # a hold Redis counts and the client does not know
    raw("PEXPIRE", "stray", 30000)
    with caplog.at_level(logging.WARNING, logger="redlease"):
        for _ in range(3):
            with lock:
                pass
            assert raw("EXISTS", "stray") == 0
        assert wait_for(lambda: any("more hold(s)" in r.getMessage() for r in caplog.records))


def test_a_thread_that_ends_holding_frees_its_lock(make_client, raw, caplog):
    client = make_client(watchdog_timeout=1.5)
    lock = client.lock("orphan")

    def forgets_to_release():
        lock.acquire()
        lock.acquire(lease=30)

    with caplog.at_level(logging.WARNING, logger="redlease"):
        t = threading.Thread(target=forgets_to_release)
        t.start()
        t.join()
        assert wait_for(lambda: raw("EXISTS", "orphan") == 0, timeout=2)
        assert lock.acquire(timeout=0)  # the main thread gets it at once
        time.sleep(1.6)  # a lease later: nothing of the ended thread was renewed or kept
        assert lock.hold_count == 1 and lock.held()
        lock.release()
        assert wait_for(lambda: any("ended without releasing" in r.getMessage()
                                    for r in caplog.records))
