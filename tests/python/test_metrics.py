"""client.stats(): the counters an operator needs move as locks are taken, waited for, renewed,
renewed in vain (an outage through the fault suite's proxy) and lost; and the Prometheus
collector's exposition, parsed by prometheus_client's own parser."""

import os
import subprocess
import sys
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import redlease
import redlease.prometheus
from testkit import wait_for

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
from proxy import FaultProxy  # noqa: E402

WATCHDOG = 1.2  # renewed every 0.4 s
SHORT = {"connect_timeout": 0.25, "command_timeout": 0.25, "watchdog_timeout": WATCHDOG}


@pytest.fixture
def proxy(server):
    p = FaultProxy(server.port)
    yield p
    p.close()


def test_acquisitions_holds_and_waits(client, make_client):
    lock = client.lock("m", lease=30)
    assert lock.acquire() and lock.acquire()  # a re-entry counts as an acquisition
    s = client.stats()
    assert (s["acquisitions"], s["holds"], s["waits"], s["waiters"]) == (2, 1, 0, 0)
    other = make_client()
    got = []
    t = threading.Thread(target=lambda: got.append(other.lock("m").acquire(timeout=20)))
    t.start()
    assert wait_for(lambda: other.stats()["waiters"] == 1, 10)
    time.sleep(0.3)
    lock.release()
    lock.release()
    t.join()
    s = other.stats()
    assert got == [True]
    assert (s["waits"], s["waiters"], s["acquisitions"]) == (1, 0, 1)
    assert s["wait_seconds_total"] >= 0.25
    assert s["wait_seconds_max"] == s["wait_seconds_total"]
    # the release's message woke it: its subscriber thread sent the acquire, the waiting thread
    # read the answer (the core's hand-off without a thread wake-up first)
    assert s["woken_acquires"] == 1
    assert client.stats()["holds"] == 0


def test_a_timed_out_wait_counts_as_a_wait(client, make_client):
    assert client.lock("m", lease=30).acquire()
    other = make_client()
    assert other.lock("m").acquire(timeout=0.2) is False
    s = other.stats()
    assert (s["waits"], s["acquisitions"], s["waiters"]) == (1, 0, 0)
    assert s["woken_acquires"] == 0
    assert 0.15 <= s["wait_seconds_max"]


def test_renewal_rounds_and_losses_by_reason(make_client, raw):
    c = make_client(**SHORT)
    lock = c.lock("renewed")
    lock.acquire()
    assert wait_for(lambda: c.stats()["renew_rounds"] >= 2, 10)
    assert c.stats()["renew_failed_rounds"] == 0
    raw("DEL", "renewed")
    assert wait_for(lambda: c.stats()["lost"]["deleted"] == 1, 10)
    s = c.stats()
    assert s["lost_total"] == 1 and s["lost"]["expired"] == 0
    with pytest.raises(redlease.LockLostError):
        lock.release()
    assert c.stats()["holds"] == 0


def test_failed_renewals_then_an_unreachable_loss(proxy, make_client):
    c = make_client(proxy.url, **SHORT)
    lock = c.lock("outage")
    lock.acquire()
    proxy.blackhole()  # renewals fail and are retried until the lease runs out
    assert wait_for(lambda: c.stats()["lost"]["unreachable"] == 1, WATCHDOG * 4)
    s = c.stats()
    assert s["renew_failed_rounds"] >= 1
    assert s["lost_total"] == 1
    proxy.pass_through()
    with pytest.raises(redlease.LockLostError):
        lock.release()


def test_prometheus_exposition_parses(client, make_client, raw):
    lock = client.lock("p", lease=30)
    assert lock.acquire()
    raw("DEL", "p")
    with pytest.raises(redlease.LockLostError):
        lock.release()
    assert lock.acquire()
    registry = CollectorRegistry()
    collector = redlease.prometheus.register(client, registry)
    text = generate_latest(registry).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        assert family.name.startswith("redlease_")
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    me = ("client", client.id)
    assert samples[("redlease_acquisitions_total", (me,))] == 2
    assert samples[("redlease_holds", (me,))] == 1
    assert samples[("redlease_waiters", (me,))] == 0
    assert samples[("redlease_holds_lost_total", (me, ("reason", "deleted")))] == 1
    assert samples[("redlease_holds_lost_total", (me, ("reason", "expired")))] == 0
    assert ("redlease_renewal_failed_rounds_total", (me,)) in samples
    assert samples[("redlease_holds_in_doubt_now", (me,))] == 0
    assert samples[("redlease_holds_in_doubt_total", (me,))] == 0
    assert samples[("redlease_holds_server_changes_total", (me,))] == 0
    registry.unregister(collector)
    labelled = CollectorRegistry()
    redlease.prometheus.register(client, labelled, label="billing")
    assert 'client="billing"' in generate_latest(labelled).decode()
    lock.release()


def test_importing_redlease_does_not_import_prometheus_client():
    code = "import sys, redlease; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
