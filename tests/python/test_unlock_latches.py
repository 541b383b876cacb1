"""Unlock latches do not linger: gone soon after a release left idle, and when close() returns."""

import threading
import time


def latches(raw):
    return raw("KEYS", "redisson_unlock_latch*")


def gone_within(raw, seconds):
    until = time.monotonic() + seconds
    while latches(raw) and time.monotonic() < until:
        time.sleep(0.01)
    return latches(raw)


def test_a_release_left_idle_leaves_no_latch_for_long(make_client, raw):
    client = make_client()
    with client.lock("idle"):
        pass
    # Sent by itself after 0.1 s idle; 1 s is a wide margin (its TTL is 20 s).
    assert gone_within(raw, 1.0) == []


def test_threads_cycling_then_closing_leave_no_latch(make_client, raw):
    client = make_client()
    start = threading.Barrier(64)

    def cycle(n):
        start.wait()
        for _ in range(20):
            with client.lock(f"cycle:{n}"):
                pass

    threads = [threading.Thread(target=cycle, args=(n,)) for n in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()  # at once: idle connections still carry their last latch's DEL
    assert latches(raw) == []
