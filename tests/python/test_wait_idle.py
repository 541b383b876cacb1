"""Threads other than the main one wait without waking every slice: only the main thread runs
Python's signal handlers, so only its waits run the Ctrl-C hook (the SIGINT test of
test_processes.py proves that one). Counted with the process's voluntary context switches."""

import resource
import threading
import time

WAITERS = 50


def switches():
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def test_waiting_threads_sleep_until_the_release(make_client):
    holder, waiting = make_client(), make_client()
    held = holder.lock("idle")
    assert held.acquire(timeout=0)
    lock = waiting.lock("idle")
    got = []

    def wait():
        if lock.acquire(timeout=30):
            got.append(1)
            lock.release()

    threads = [threading.Thread(target=wait) for _ in range(WAITERS)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # all of them asleep in the core
    before = switches()
    time.sleep(1.5)
    during = switches() - before
    held.release()
    for t in threads:
        t.join(30)
    assert len(got) == WAITERS
    # Waking every 50 ms, 50 threads switch about 1500 times in 1.5 s.
    assert during < 200, during
