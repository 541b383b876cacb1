"""No leaks: many Lock objects and many cycles leave memory flat."""

import gc


def rss_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import resource
    return pages * resource.getpagesize() // 1024


def test_creating_and_dropping_100000_locks_is_flat(client):
    for i in range(10_000):  # warm up allocator pools
        client.lock(f"warm:{i}")
    gc.collect()
    before = rss_kib()
    for i in range(100_000):
        client.lock(f"name:{i}")
    gc.collect()
    grown = rss_kib() - before
    print(f"RSS growth over 100,000 Lock objects: {grown} KiB")
    assert grown < 2048  # a leak of even 40 bytes per lock would be ~4 MiB


def test_10000_cycles_are_flat(client):
    lock = client.lock("cycles")
    for _ in range(1_000):
        with lock:
            pass
    gc.collect()
    before = rss_kib()
    for _ in range(10_000):
        with lock:
            pass
    gc.collect()
    grown = rss_kib() - before
    print(f"RSS growth over 10,000 acquire/release cycles: {grown} KiB")
    assert grown < 1024


def test_error_paths_are_flat(make_client):
    import redlease
    holder, other = make_client(), make_client()
    holder.lock("taken").acquire()
    busy, never = other.lock("taken"), other.lock("never-held")

    def failures():
        assert not busy.acquire(timeout=0)
        try:
            never.release()
        except redlease.NotOwnedError:
            pass
        try:
            other.lock("x", lease=-1)
        except ValueError:
            pass

    for _ in range(500):
        failures()
    gc.collect()
    before = rss_kib()
    for _ in range(5_000):
        failures()
    gc.collect()
    grown = rss_kib() - before
    print(f"RSS growth over 5,000 rounds of refused calls: {grown} KiB")
    assert grown < 1024
