"""Estimated starts of pending Workloads: a small periodic loop beside the admission loop.

Every ``period_s`` it lists Kueue's objects, builds the admission snapshot (quota only, as the
simulator does), asks the pure core for a decision *with estimates*
(``decide(snapshot, now, estimate=True)``: each pending workload's earliest slot in its
ClusterQueue's capacity profile, running workloads ending at admitted-at + runtime estimate)
and writes the result to each pending Workload as the annotation ``kubehpc.io/estimated-start``
(RFC 3339; removed when unknown or no longer pending) — only when it moved by more than
``tolerance_s``, so a steady queue costs no writes. ``kubehpc get workloads -o wide`` and
``kubehpc squeue --start`` show it. The same estimate goes into the Workload's status as the
condition ``kubehpc.io/EstimatedStart`` (Kueue's status has no field for it; a condition of a
prefixed type is what its schema leaves open to other controllers), so ``kubectl describe``
and anything that reads status see it too.

It runs apart from the admission loop on purpose: the estimate is a full profile per
ClusterQueue, which the hot admission path should not pay for on every change. Admissions are
left to the admission loop: what this loop's decision would admit is simply not written.

Where a job's runtime estimate comes from when its Workload is made: ``runtimes.py``.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError
from kubehpc.api.kinds.kueue.workload import ESTIMATED_START_ANNOTATION
from kubehpc.controllers.job.clock import Clock, RealClock
from kubehpc.controllers.kueue import cache as C
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue import workloads as W
from kubehpc.controllers.kueue.conditions import find, remove_condition, set_condition
from kubehpc.sched.admission import build, decide
from kubehpc.sched.admission.model import AdmissionConfig
from kubehpc.store.client import Client, ListOptions, PatchType

log = logging.getLogger(__name__)
Obj = dict[str, Any]

ESTIMATED_START_CONDITION = "kubehpc.io/EstimatedStart"
ESTIMATED_REASON = "Estimated"


def condition_message(start: str, cluster_queue: str) -> str:
    return (
        f"expected to be admitted at {start}: its earliest slot in the quota of ClusterQueue "
        f"{cluster_queue}, from the runtime estimates of the workloads running and ahead of it"
    )


def _newest(items: list[Obj]) -> int:
    return max((int(F.metadata(o).get("resourceVersion") or 0) for o in items), default=0)


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class EstimateOptions:
    period_s: float = 5.0
    tolerance_s: float = 1.0
    """An estimate that moved by less than this is not rewritten."""
    config: AdmissionConfig = field(default_factory=AdmissionConfig)
    max_share: float = 0.05
    """Of wall time, what passes may take at most: after a pass of d seconds the next comes
    d / max_share later at the earliest (a pass over 15,000 Workloads takes about half a
    second; estimates are advice and must not slow admission down)."""


class EstimateLoop:
    def __init__(
        self, client: Client, options: EstimateOptions | None = None, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.options = options or EstimateOptions()
        self.clock = clock or RealClock()
        self._version: tuple[tuple[str, int, int], ...] = ()
        self._valid_until = 0.0
        # Workloads converted by earlier passes: the read-only lists hand back the store's own
        # object for a version, so a pass converts only the Workloads changed since the last.
        self.memo = build.WorkloadMemo()
        self.computed = 0  # passes that ran the core (the others found nothing changed)

    def run(self, stop: threading.Event) -> None:
        """Refresh every ``period_s`` until ``stop`` is set (the control plane's loop shape)."""
        wait = self.options.period_s
        while not stop.wait(wait):
            started = time.monotonic()
            try:
                self.refresh()
            except Exception:  # the next period starts afresh from the store
                log.exception("estimating start times failed")
            wait = self.next_wait(time.monotonic() - started)

    def next_wait(self, pass_s: float) -> float:
        """Seconds until the next pass, after one that took ``pass_s``."""
        return max(self.options.period_s, pass_s / self.options.max_share)

    def _list(self, kind: str, api_version: str = k.KUEUE_API_VERSION) -> list[Obj]:
        # Read only (writes go through copies: a patch, and a status built anew).
        return list(self.client.list(api_version, kind, ListOptions(read_only=True)).items)

    def refresh(self) -> int:
        """One pass: returns how many Workloads were written."""
        lists = {
            kind: self._list(kind)
            for kind in (k.WORKLOAD, k.CLUSTER_QUEUE, k.COHORT, k.RESOURCE_FLAVOR, k.LOCAL_QUEUE)
        }
        lists[C.NAMESPACE] = self._list(C.NAMESPACE, "v1")
        now = self.clock.now().timestamp()
        # Estimates change only when an object changes, or when a running workload outlives its
        # estimated end (it is then expected to end a second from "now", which moves): until
        # one of those, the last pass still holds and the profile is not recomputed.
        version = tuple(sorted((kind, _newest(items), len(items)) for kind, items in lists.items()))
        if version == self._version and now < self._valid_until:
            return 0
        workloads = lists[k.WORKLOAD]
        snapshot = build.snapshot_from_objects(
            cluster_queues=lists[k.CLUSTER_QUEUE],
            cohorts=lists[k.COHORT],
            resource_flavors=lists[k.RESOURCE_FLAVOR],
            local_queues=lists[k.LOCAL_QUEUE],
            workloads=workloads,
            namespaces=lists[C.NAMESPACE],
            config=self.options.config,
            memo=self.memo,
        )
        decisions = decide(snapshot, now, estimate=True)
        self.computed += 1
        ends = [
            wl.reserved_at + wl.runtime_estimate
            for wl in snapshot.workloads
            if wl.reserved is not None and wl.runtime_estimate is not None
        ]
        self._version = version
        overrun = any(e <= now for e in ends)
        self._valid_until = now if overrun else min(ends, default=math.inf)
        wanted = {p.workload: p for p in decisions.pending if p.estimated_start is not None}
        written = 0
        for wl in workloads:
            pending = wanted.get(W.key_of(wl))
            annotations = F.annotations(wl)
            current = annotations.get(ESTIMATED_START_ANNOTATION)
            value: str | None = None
            if pending is not None and pending.estimated_start is not None:
                old = _epoch(current)
                keep = old is not None and abs(old - pending.estimated_start) < self.options.tolerance_s
                value = current if keep else stamp(pending.estimated_start)
            wrote = False
            if value != current:
                # The status write below goes with the resourceVersion this write leaves.
                after = self._write(wl, value)
                wrote, wl = after is not None, after or wl
            cq = pending.cluster_queue if pending is not None else ""
            wrote = self._write_condition(wl, value, cq) or wrote
            written += wrote
        return written

    def _write(self, wl: Obj, value: str | None) -> Obj | None:
        meta = wl["metadata"]
        try:
            return self.client.patch(
                k.KUEUE_API_VERSION,
                k.WORKLOAD,
                str(meta["name"]),
                {"metadata": {"annotations": {ESTIMATED_START_ANNOTATION: value}}},
                PatchType.MERGE,
                namespace=meta.get("namespace"),
            )
        except ApiError as err:  # gone or changed meanwhile: the next pass looks again
            log.info("writing the estimated start of %s failed: %s", W.key_of(wl), err)
            return None

    def _write_condition(self, wl: Obj, value: str | None, cluster_queue: str) -> bool:
        """Mirror the estimate into status; a replace of status with the listed
        resourceVersion, so a write racing the admission loop's fails instead of undoing it."""
        cond = find(wl, ESTIMATED_START_CONDITION)
        if value is None and cond is None:
            return False
        message = condition_message(value, cluster_queue) if value is not None else ""
        if value is not None and cond is not None and cond.get("message") == message:
            return False
        status = dict(F.status(wl))
        status["conditions"] = [dict(c) for c in F.object_list(status, "conditions")]
        if value is None:
            remove_condition(status, ESTIMATED_START_CONDITION)
        else:
            set_condition(
                status, ESTIMATED_START_CONDITION, "True", ESTIMATED_REASON, message, self.clock.now()
            )
        try:
            self.client.update_status({**wl, "status": status})
        except ApiError as err:  # changed meanwhile: the next pass looks again
            log.info("writing the estimated start condition of %s failed: %s", W.key_of(wl), err)
            return False
        return True
