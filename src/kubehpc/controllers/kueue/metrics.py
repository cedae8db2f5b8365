"""Kueue's scheduler metrics, under a ``kubehpc_`` prefix (see docs/metrics.md).

Names and labels follow Kueue's (``kueue_pending_workloads`` -> ``kubehpc_pending_workloads``);
amounts are in base units (cores, bytes, devices). Everything is registered in the
``CollectorRegistry`` handed in, so several control planes (tests) never share counters and the
server exposes exactly the registry it is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "kubehpc_"
# Kueue's buckets for wait times: 1s .. ~5.7 days (generateExponentialBuckets(14)).
WAIT_BUCKETS = (*tuple(float(2**i) for i in range(0, 14)), float("inf"))
ATTEMPT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, float("inf"))

# pending_workloads{status}: "active" ones wait only for their turn (behind the queue head,
# for victims to go, or for room taken earlier in the cycle); "inadmissible" ones do not fit
# (or cannot reach a ClusterQueue) until something changes, as in Kueue.
ACTIVE = "active"
INADMISSIBLE = "inadmissible"
# cluster_queue_status{status}
CQ_STATUSES = ("pending", "active", "terminating")
SUCCESS = "success"


class KueueMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.pending_workloads = Gauge(
            PREFIX + "pending_workloads",
            "Number of pending workloads, per cluster_queue and status (active or inadmissible)",
            ["cluster_queue", "status"],
            registry=registry,
        )
        self.admitted_active_workloads = Gauge(
            PREFIX + "admitted_active_workloads",
            "Number of admitted workloads that have not finished, per cluster_queue",
            ["cluster_queue"],
            registry=registry,
        )
        self.admitted_workloads_total = Counter(
            PREFIX + "admitted_workloads",
            "Total number of admitted workloads per cluster_queue",
            ["cluster_queue"],
            registry=registry,
        )
        self.admission_wait_time = Histogram(
            PREFIX + "admission_wait_time_seconds",
            "Time from a workload's creation (or requeue) until its admission, per cluster_queue",
            ["cluster_queue"],
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self.admission_attempts_total = Counter(
            PREFIX + "admission_attempts",
            "Admission cycles; result is success when the cycle admitted a workload, else inadmissible",
            ["result"],
            registry=registry,
        )
        self.admission_attempt_duration = Histogram(
            PREFIX + "admission_attempt_duration_seconds",
            "Duration of an admission cycle (snapshot, decide and apply), per result",
            ["result"],
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        quota_labels = ["cluster_queue", "flavor", "resource"]
        self.nominal_quota = Gauge(
            PREFIX + "cluster_queue_nominal_quota",
            "Nominal quota of a ClusterQueue per flavor and resource",
            quota_labels,
            registry=registry,
        )
        self.resource_reservation = Gauge(
            PREFIX + "cluster_queue_resource_reservation",
            "Quota reserved by workloads of a ClusterQueue per flavor and resource",
            quota_labels,
            registry=registry,
        )
        self.resource_usage = Gauge(
            PREFIX + "cluster_queue_resource_usage",
            "Quota used by admitted workloads of a ClusterQueue per flavor and resource",
            quota_labels,
            registry=registry,
        )
        self.preempted_workloads_total = Counter(
            PREFIX + "preempted_workloads",
            "Workloads preempted, per ClusterQueue of the preemptor and reason",
            ["preempting_cluster_queue", "reason"],
            registry=registry,
        )
        self.cluster_queue_status = Gauge(
            PREFIX + "cluster_queue_status",
            "1 for the ClusterQueue's current status (pending, active or terminating), 0 otherwise",
            ["cluster_queue", "status"],
            registry=registry,
        )
        self._queues: set[str] = set()
        self._quota_labels: set[tuple[str, str, str]] = set()
        # Each series' child, by metric and label values: prometheus_client's labels() checks
        # and converts the values and takes a lock on every call. And the value each gauge
        # series was last set to: every admission cycle reports every ClusterQueue it looked
        # at, most of them unchanged.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._last: dict[tuple[int, tuple[str, ...]], float] = {}

    def child(self, metric: Counter | Gauge | Histogram, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once per series."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def set_gauge(self, gauge: Gauge, value: float, *labels: str) -> None:
        """``gauge.labels(*labels).set(value)``, skipped when the series already holds it."""
        key = (id(gauge), labels)
        if self._last.get(key) != value:
            self.child(gauge, *labels).set(value)
            self._last[key] = value

    def forget_gone(self, queues: Iterable[str], quota_labels: Iterable[tuple[str, str, str]]) -> None:
        """Drop the series of ClusterQueues (and quota cells) that no longer exist."""
        queues, quota_labels = set(queues), set(quota_labels)
        for gone in self._queues - queues:
            for status in (ACTIVE, INADMISSIBLE):
                self._remove(self.pending_workloads, gone, status)
            self._remove(self.admitted_active_workloads, gone)
            for status in CQ_STATUSES:
                self._remove(self.cluster_queue_status, gone, status)
        for cell in self._quota_labels - quota_labels:
            for gauge in (self.nominal_quota, self.resource_reservation, self.resource_usage):
                self._remove(gauge, *cell)
        self._queues, self._quota_labels = queues, quota_labels

    def _remove(self, gauge: Gauge, *labels: str) -> None:
        key = (id(gauge), labels)
        self._children.pop(key, None)
        self._last.pop(key, None)
        try:
            gauge.remove(*labels)
        except KeyError:
            pass  # never set
