"""redlease.PermitExpirableSemaphore: Redisson's RPermitExpirableSemaphore layout, permits that
come back by themselves, waits woken by an expiry, lease updates, permits renewed by the watchdog
(redlease's opt-in), the permit() context manager, and bad input."""

import time

import pytest

import redlease


def test_permits_in_redissons_layout(client, raw):
    sem = client.permit_expirable_semaphore("workers")
    assert sem.try_set_permits(2) is True
    before = int(raw("TIME")[0]) * 1000
    permit = sem.acquire(5)
    assert isinstance(permit, str) and len(permit) == 32 and int(permit, 16) >= 0
    assert raw("GET", "workers") == b"1"
    date = float(raw("ZSCORE", "{workers}:timeout", bytes.fromhex(permit)))
    assert before + 4000 < date < before + 7000  # Redis's clock, epoch ms, plus the lease
    assert sem.available_permits() == 1
    sem.release(permit)
    assert raw("GET", "workers") == b"2" and raw("ZCARD", "{workers}:timeout") == 0
    with pytest.raises(redlease.NotOwnedError, match=permit):
        sem.release(permit)


def test_a_permit_comes_back_by_itself(make_client):
    a, b = make_client(), make_client()
    sa, sb = a.permit_expirable_semaphore("crash"), b.permit_expirable_semaphore("crash")
    sa.try_set_permits(1)
    crashed = sa.acquire(0.4)  # never released
    assert sb.acquire(5, timeout=0) is None
    start = time.monotonic()
    permit = sb.acquire(5, timeout=5)  # woken when the first permit's date passes
    assert permit is not None and permit != crashed
    assert 0.25 < time.monotonic() - start < 2.5
    with pytest.raises(redlease.NotOwnedError):
        sa.release(crashed)  # taken back already
    sb.release(permit)


def test_release_after_the_lease_raises_lost(client, raw):
    sem = client.permit_expirable_semaphore("late")
    sem.try_set_permits(1)
    permit = sem.acquire(0.1)
    time.sleep(0.25)
    with pytest.raises(redlease.LockLostError) as e:
        sem.release(permit)
    assert e.value.reason == "expired"
    assert raw("GET", "late") == b"1"


def test_update_lease_time_keeps_a_permit(client):
    sem = client.permit_expirable_semaphore("longer")
    sem.try_set_permits(1)
    permit = sem.acquire(0.3)
    sem.update_lease_time(permit, 10)
    time.sleep(0.5)
    assert sem.acquire(1, timeout=0) is None
    sem.release(permit)
    with pytest.raises(redlease.NotOwnedError):
        sem.update_lease_time(permit, 1)


def test_watchdog_renews_a_permit_until_released(make_client, raw):
    client = make_client(watchdog_timeout=0.6)
    sem = client.permit_expirable_semaphore("renewed")
    sem.try_set_permits(1)
    permit = sem.acquire(None)  # lease=None: the watchdog renews it
    first = float(raw("ZSCORE", "{renewed}:timeout", bytes.fromhex(permit)))
    time.sleep(1.5)  # over two watchdog timeouts
    assert float(raw("ZSCORE", "{renewed}:timeout", bytes.fromhex(permit))) > first + 500
    assert sem.lost_reason(permit) is None
    assert client.stats()["renewed_holds"] >= 2
    sem.release(permit)
    assert raw("GET", "renewed") == b"1"


def test_permit_context_manager(client, raw):
    sem = client.permit_expirable_semaphore("ctx")
    sem.try_set_permits(1)
    with sem.permit(5) as permit:
        assert raw("ZCARD", "{ctx}:timeout") == 1 and len(permit) == 32
        with pytest.raises(redlease.LockTimeout):
            with sem.permit(5, timeout=0.1):
                pass
    assert raw("ZCARD", "{ctx}:timeout") == 0 and raw("GET", "ctx") == b"1"


def test_bad_input(client, raw):
    sem = client.permit_expirable_semaphore("badperm")
    with pytest.raises(ValueError, match="lease"):
        sem.acquire(0)
    with pytest.raises(ValueError, match="lease"):
        sem.acquire(-1)
    with pytest.raises(TypeError):
        sem.acquire()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="permits must be"):
        sem.try_set_permits(-1)
    with pytest.raises(ValueError, match="32 hex digits"):
        sem.release("not-a-permit")
    with pytest.raises(TypeError, match="a permit id is a str"):
        sem.release(b"0" * 32)  # type: ignore[arg-type]
    with pytest.raises(redlease.NotOwnedError, match="no permit"):
        sem.release("0" * 32)
    with pytest.raises(ValueError, match="lease"):
        sem.update_lease_time("0" * 32, 0)
    assert raw("EXISTS", "badperm") == 0
