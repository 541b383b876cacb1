"""Waiting on a lock releases the GIL: a CPU-bound thread keeps most of its speed."""

import threading
import time

import redlease


def spin(seconds):
    """Pure-Python work; returns how many loop rounds fit in `seconds`."""
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(1000):
            n += 1
    return n


def test_cpu_thread_keeps_its_speed_while_8_threads_wait(make_client):
    holder, waiters = make_client(), make_client()
    holder.lock("gil").acquire()
    spin(0.2)  # warm up
    solo = max(spin(0.5) for _ in range(2))
    stop = threading.Event()

    def wait():
        lock = waiters.lock("gil")
        while not stop.is_set():
            if lock.acquire(timeout=0.5):  # never: the holder keeps it
                lock.release()

    threads = [threading.Thread(target=wait) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    try:
        contended = max(spin(0.5) for _ in range(2))
    finally:
        stop.set()
        for t in threads:
            t.join()
    ratio = contended / solo
    print(f"CPU thread speed with 8 waiters: {ratio:.2f} of solo")
    assert ratio > 0.5  # the measured ratio is near 1; holding the GIL while waiting gives ~0
