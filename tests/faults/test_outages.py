"""Outages between a holder and Redis, injected by the proxy: what survives, what is reported."""

import logging
import os
import signal
import time

import pytest

import redlease
from conftest import PERIOD, WATCHDOG
from testkit import wait_for


@pytest.mark.parametrize("fault", ["refuse", "blackhole"])
def test_outage_shorter_than_the_lease_is_survived_silently(proxy, raw, make_client, lost, fault,
                                                           caplog):
    caplog.set_level(logging.WARNING, logger="redlease")
    c = make_client(proxy.url, on_lost=lost)
    lock = c.lock("survives")
    lock.acquire()
    time.sleep(PERIOD + 0.05)  # a renewal went through: a full lease is confirmed
    getattr(proxy, fault)()
    time.sleep(WATCHDOG * 0.4)  # well inside the confirmed lease
    proxy.pass_through()
    time.sleep(WATCHDOG * 1.5)  # more than a lease: only renewals kept it
    assert not lock.lost and lost.calls == []
    assert raw("PTTL", "survives") > 0
    lock.release()
    assert raw("EXISTS", "survives") == 0
    # retried renewals were logged as warnings, the loss was not
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("fault", ["refuse", "blackhole"])
def test_outage_longer_than_the_lease_is_reported_everywhere(proxy, make_client, lost, fault,
                                                            caplog):
    caplog.set_level(logging.WARNING, logger="redlease")
    c = make_client(proxy.url, on_lost=lost)
    lock = c.lock("outage")
    lock.acquire()
    getattr(proxy, fault)()
    start = time.monotonic()
    assert lost.wait(WATCHDOG + PERIOD + 1.0)
    elapsed = lost.calls[0][2] - start
    assert WATCHDOG - PERIOD - 0.1 <= elapsed <= WATCHDOG + PERIOD + 0.5, elapsed
    assert lost.calls[0][:2] == ("outage", "unreachable")
    assert lock.lost and lock.lost_reason == "unreachable"
    assert any(r.levelno == logging.WARNING and "renewal failed" in r.message
               for r in caplog.records)
    assert wait_for(lambda: any(r.levelno == logging.ERROR and "outage" in r.message
                                for r in caplog.records), 2)
    with pytest.raises(redlease.LockLostError) as info:
        lock.release()  # no network needed: the hold is known lost
    assert info.value.reason == "unreachable"
    proxy.pass_through()
    assert lock.acquire(timeout=WATCHDOG * 2)  # the old key expired; usable again
    lock.release()


def test_with_block_raises_lock_lost_after_an_outage(proxy, make_client, lost):
    c = make_client(proxy.url, on_lost=lost)
    with pytest.raises(redlease.LockLostError):
        with c.lock("with-outage"):
            proxy.refuse()
            assert lost.wait(WATCHDOG + PERIOD + 1.0)
    proxy.pass_through()


def test_redis_restart_loses_the_data_and_the_loss_is_detected(server, make_client, lost):
    c = make_client(server.url, on_lost=lost)
    lock = c.lock("restarted")
    lock.acquire()
    server.stop()
    server.start()  # same port, no data
    start = time.monotonic()
    assert lost.wait(PERIOD * 2 + 1.0)  # at the next renewal that reaches the new server
    assert time.monotonic() - start <= PERIOD * 2 + 1.0
    # Not renewed yet, the hold still knows the server that granted it: a new server is a
    # failover (a restart here, a promoted replica in production), not an ordinary deletion.
    assert lost.calls[0][:2] == ("restarted", "failover")
    with pytest.raises(redlease.LockLostError):
        lock.release()
    # A new hold on the same name, by the same client, is renewed as any other.
    assert lock.acquire(timeout=0)
    time.sleep(WATCHDOG * 2)
    assert not lock.lost and lock.remaining() > WATCHDOG - PERIOD - 0.2
    assert len(lost.calls) == 1
    assert not make_client(server.url).lock("restarted").acquire(timeout=0)
    lock.release()


def test_restart_after_a_renewal_is_seen_as_a_server_change(server, make_client, lost):
    """A hold renewed at least once: a new server (a restart here, a promoted replica in a
    failover) puts it in doubt and, lacking the hold, reports it lost as ``failover`` rather
    than as an ordinary deletion."""
    states = []
    c = make_client(server.url, on_lost=lost,
                    on_state=lambda name, state, why: states.append((state, why, time.monotonic())))
    lock = c.lock("restarted:renewed")
    lock.acquire()
    assert wait_for(lambda: c.stats()["renewed_holds"] >= 1, PERIOD * 3)
    server.stop()
    server.start()  # same port, no data
    restarted = time.monotonic()
    assert lost.wait(PERIOD * 2 + 1.0)
    assert lost.calls[0][:2] == ("restarted:renewed", "failover")
    assert lock.lost_reason == "failover" and c.stats()["server_changes"] == 1
    assert [s for s, _, _ in states] == ["in_doubt", "lost"], states
    assert "server changed" in states[0][1]
    print("restart -> in doubt %.3f s -> lost %.3f s" % (states[0][2] - restarted,
                                                         states[1][2] - restarted))
    with pytest.raises(redlease.LockLostError):
        lock.release()


def test_release_during_an_outage_raises_and_stops_renewal(proxy, raw, make_client, lost):
    c = make_client(proxy.url, on_lost=lost)
    lock = c.lock("release-fails")
    lock.acquire()
    proxy.refuse()
    with pytest.raises(redlease.ConnectionError):
        lock.release()
    proxy.pass_through()
    # renewal stopped at the failed release: the key runs out within one lease of the outage
    pttl_before = raw("PTTL", "release-fails")
    assert 0 < pttl_before <= WATCHDOG * 1000
    time.sleep(PERIOD * 1.5)
    assert raw("PTTL", "release-fails") < pttl_before - PERIOD * 1000  # not renewed
    assert wait_for(lambda: raw("EXISTS", "release-fails") == 0, WATCHDOG + 0.5)
    assert lost.calls == []  # released by the user, not lost behind their back


def test_retried_release_after_an_outage_is_idempotent(proxy, raw, make_client):
    c = make_client(proxy.url)
    lock = c.lock("retry-release")
    lock.acquire()
    lock.acquire()  # two holds: the release must take exactly one
    proxy.refuse()
    with pytest.raises(redlease.ConnectionError):
        lock.release()
    proxy.pass_through()
    lock.release()  # the same release, retried
    owner = raw("HKEYS", "retry-release")
    assert len(owner) == 1 and raw("HGET", "retry-release", owner[0]) == b"1"
    assert lock.hold_count == 1
    lock.release()
    assert raw("EXISTS", "retry-release") == 0


def test_released_reply_lost_then_retried_counts_once(proxy, raw, make_client):
    # The release reaches Redis but its answer is swallowed; the retry must not take a 2nd hold.
    c = make_client(proxy.url)
    with c.lock("warm-up"):  # scripts loaded: the muted call is the release itself
        pass
    lock = c.lock("answer-lost")
    lock.acquire()
    lock.acquire()
    proxy.mute()
    with pytest.raises(redlease.ConnectionError):
        lock.release()
    owner = raw("HKEYS", "answer-lost")
    assert raw("HGET", "answer-lost", owner[0]) == b"1"  # Redis did release one hold
    proxy.pass_through()
    proxy.cut()  # drop the connection whose answer was swallowed
    lock.release()  # retried: answered from the unlock latch, not applied twice
    assert raw("HGET", "answer-lost", owner[0]) == b"1"
    assert lock.hold_count == 1
    lock.release()
    assert raw("EXISTS", "answer-lost") == 0


def test_latency_below_the_command_timeout_is_harmless(proxy, make_client, lost):
    c = make_client(proxy.url, command_timeout=1.0, on_lost=lost)
    proxy.set_latency(0.1)
    lock = c.lock("slow")
    with lock:
        time.sleep(WATCHDOG * 1.5)
        assert not lock.lost
    assert lost.calls == []


def test_server_paused_shorter_than_the_lease(server, raw, make_client, lost):
    c = make_client(server.url, on_lost=lost)
    lock = c.lock("paused")
    lock.acquire()
    time.sleep(PERIOD + 0.05)
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        time.sleep(WATCHDOG * 0.4)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    time.sleep(WATCHDOG * 1.2)
    assert not lock.lost and lost.calls == []
    assert raw("PTTL", "paused") > 0
    lock.release()


def test_server_paused_longer_than_the_lease(server, raw, make_client, lost):
    c = make_client(server.url, on_lost=lost)
    lock = c.lock("paused-long")
    lock.acquire()
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        assert lost.wait(WATCHDOG + PERIOD + 1.0)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert lost.calls[0][:2] == ("paused-long", "unreachable")
    other = make_client(server.url)
    assert other.lock("paused-long").acquire(timeout=WATCHDOG + 1.0)  # Redis expires it
    with pytest.raises(redlease.LockLostError):
        lock.release()


def test_fair_waiter_whose_first_try_fails_leaves_the_queue(server, proxy, raw, make_client):
    """The first try may queue the waiter on the server and still fail here (its answer came too
    late): the waiter must take its place back out, or the lock stays blocked for everyone until
    that place expires."""
    holder = make_client(server.url).fair_lock("fair-first-try")
    holder.acquire(lease=20)
    waiting_client = make_client(proxy.url)
    warm = waiting_client.fair_lock("warm-up")  # connected, scripts loaded: the try itself is late
    assert warm.acquire(timeout=1)
    warm.release()
    waiter = waiting_client.fair_lock("fair-first-try")
    proxy.set_latency(0.15)  # requests arrive, answers come after the 0.25 s command timeout
    with pytest.raises(redlease.ConnectionError):
        waiter.acquire(timeout=5)
    assert wait_for(lambda: raw("EXISTS", "redisson_lock_queue:{fair-first-try}") == 0, 3)
    proxy.set_latency(0)
    holder.release()
    assert make_client(server.url).fair_lock("fair-first-try").acquire(timeout=1)
