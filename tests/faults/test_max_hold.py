"""max_hold: the watchdog renews a hold only so long, then reports it lost (Redisson has no cap)."""

import time

import pytest

import redlease


def test_client_max_hold_ends_renewal_and_reports(server, raw, make_client, lost):
    c = make_client(server.url, watchdog_timeout=0.6, max_hold=1.5, on_lost=lost)
    lock = c.lock("capped")
    start = time.monotonic()
    with pytest.raises(redlease.LockLostError) as info:
        with lock:
            while not lock.lost and time.monotonic() - start < 5:
                assert raw("PTTL", "capped") > 0  # renewed past its 0.6 s lease meanwhile
                time.sleep(0.02)
            held_for = time.monotonic() - start
    assert info.value.reason == "max_hold"
    assert 1.5 - 0.05 <= held_for <= 1.5 + 0.2 + 0.5  # within one renewal period of the cap
    assert [call[:2] for call in lost.calls] == [("capped", "max_hold")]
    # not renewed any more: gone within one lease
    deadline = time.monotonic() + 0.6 + 0.5
    while raw("EXISTS", "capped") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert raw("EXISTS", "capped") == 0


def test_lock_and_acquire_override_the_client_cap(server, raw, make_client, lost):
    c = make_client(server.url, watchdog_timeout=0.6, max_hold=0.9, on_lost=lost)
    uncapped = c.lock("uncapped", max_hold=None)
    with uncapped:
        time.sleep(1.6)
        assert not uncapped.lost and raw("PTTL", "uncapped") > 0
    assert lost.calls == []
    lock = c.lock("per-acquire")
    assert lock.acquire(max_hold=None)
    time.sleep(1.6)
    assert not lock.lost
    lock.release()
    shorter = c.lock("shorter", max_hold=None)
    shorter.acquire(max_hold=0.5)
    assert lost.wait(0.5 + 0.2 + 1.0)
    assert lost.calls[0][:2] == ("shorter", "max_hold")
    with pytest.raises(redlease.LockLostError):
        shorter.release()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1"])
def test_bad_max_hold(server, make_client, bad):
    exc = TypeError if isinstance(bad, str) else ValueError
    with pytest.raises(exc):
        make_client(server.url, max_hold=bad)
    c = make_client(server.url)
    with pytest.raises(exc):
        c.lock("x", max_hold=bad)
    with pytest.raises(exc):
        c.lock("x").acquire(max_hold=bad)
