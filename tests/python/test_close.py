"""close(): prompt whatever the network does; every thread in a call gets ClientClosedError."""

import os
import signal
import threading
import time

import redlease


def test_close_is_prompt_with_the_server_paused(make_client, server):
    holder = make_client()
    client = make_client(watchdog_timeout=3, command_timeout=5)
    holder.lock("paused").acquire()
    client.lock("renewed").acquire()
    errors = []

    def wait():
        try:
            client.lock("paused").acquire()
        except redlease.LockError as e:
            errors.append((type(e), time.monotonic()))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        time.sleep(1.2)  # a renewal round is on the wire
        t0 = time.monotonic()
        client.close()
        took = time.monotonic() - t0
        waiter.join(5)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert took < 0.5
    assert len(errors) == 1 and errors[0][0] is redlease.ClientClosedError
    assert errors[0][1] - t0 < 0.5


def test_close_under_load_raises_client_closed_only(make_client):
    for _ in range(4):
        client = make_client()
        stop = threading.Event()
        other_errors = []

        def cycle(i, client=client, stop=stop, other_errors=other_errors):
            lock = client.lock(f"load:{i % 4}")
            while not stop.is_set():
                try:
                    if lock.acquire(timeout=0):
                        lock.release()
                except redlease.ClientClosedError:
                    return
                except Exception as e:  # anything else is the bug
                    other_errors.append(repr(e))
                    return

        threads = [threading.Thread(target=cycle, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        client.close()
        stop.set()
        for t in threads:
            t.join()
        assert other_errors == []
