"""A Prometheus collector of a client's counters (``pip install redlease[prometheus]``).

    import redlease.prometheus
    redlease.prometheus.register(client)          # prometheus_client's default registry

Every scrape reads ``client.stats()`` (no round trip to Redis) and exposes it with ``redlease_``
names and a ``client`` label (the client's id unless ``label`` is given). Importing redlease
alone never imports prometheus_client; this module does.
"""

from typing import Dict, Iterator, Optional

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from ._client import Client

_COUNTERS = (
    ("redlease_acquisitions", "Acquires that took a hold (re-entries included).", "acquisitions"),
    ("redlease_waits", "Acquires that found the lock held and waited.", "waits"),
    ("redlease_wait_seconds", "Time spent waiting for locks.", "wait_seconds_total"),
    ("redlease_renewal_rounds", "Watchdog renewal rounds that reached Redis.", "renew_rounds"),
    ("redlease_renewal_failed_rounds", "Renewal rounds that failed on the network (retried).",
     "renew_failed_rounds"),
    ("redlease_holds_in_doubt", "Times a hold went in doubt (a renewal failed).",
     "in_doubt_total"),
    ("redlease_holds_server_changes",
     "Holds found on another server than the one that renewed them (failover, restart).",
     "server_changes"),
    ("redlease_master_changes",
     "New masters this client followed (Sentinel failovers, Cluster slot map changes).",
     "master_changes"),
    ("redlease_replica_sync_waits", "Lock writes followed by a WAIT (sync_replicas).",
     "sync_waits"),
    ("redlease_replica_sync_acks", "Replica acknowledgements of those WAITs, in total.",
     "sync_acks"),
    ("redlease_replica_sync_skipped",
     "Lock writes that stood unreplicated: no replica was listed (sync_replicas).",
     "sync_skipped"),
)
_GAUGES = (
    ("redlease_wait_seconds_max", "The longest wait for a lock so far.", "wait_seconds_max"),
    ("redlease_holds", "Locks held now ((lock, thread) holds).", "holds"),
    ("redlease_waiters", "Acquires waiting now.", "waiters"),
    ("redlease_holds_in_doubt_now", "Holds in doubt now: a renewal failed, the lease may still "
     "be valid.", "in_doubt"),
)


class RedleaseCollector(Collector):
    """Collects one client's counters at every scrape."""

    def __init__(self, client: Client, label: Optional[str] = None) -> None:
        self._client = client
        self._label = label if label is not None else client.id

    def collect(self) -> Iterator[Metric]:
        """The client's counters and gauges now; nothing once the client is closed."""
        if self._client.closed:
            return
        stats = self._client.stats()
        values: Dict[str, float] = {k: v for k, v in stats.items() if isinstance(v, (int, float))}
        for name, doc, key in _COUNTERS:
            counter = CounterMetricFamily(name, doc, labels=["client"])
            counter.add_metric([self._label], values[key])
            yield counter
        for name, doc, key in _GAUGES:
            gauge = GaugeMetricFamily(name, doc, labels=["client"])
            gauge.add_metric([self._label], values[key])
            yield gauge
        lost = CounterMetricFamily("redlease_holds_lost", "Holds lost while held, by reason.",
                                   labels=["client", "reason"])
        for reason, n in stats["lost"].items():
            lost.add_metric([self._label, reason], float(n))
        yield lost


def register(client: Client, registry: Optional[CollectorRegistry] = None, *,
             label: Optional[str] = None) -> RedleaseCollector:
    """Registers a collector of ``client``'s counters with ``registry`` (default: the global
    one) and returns it (``registry.unregister(collector)`` undoes it)."""
    collector = RedleaseCollector(client, label)
    (registry if registry is not None else REGISTRY).register(collector)
    return collector
