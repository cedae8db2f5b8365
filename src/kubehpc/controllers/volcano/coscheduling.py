"""Status of scheduler-plugins PodGroups (scheduling.x-k8s.io/v1alpha1), as that project's
PodGroup controller keeps it: pods join with the label ``scheduling.x-k8s.io/pod-group``.

=================  ==========================================================================
phase              when
=================  ==========================================================================
Pending            fewer pods than ``minMember`` exist
PreScheduling      (from Pending) ``minMember`` pods exist, none placed yet
Scheduling         placed and done pods are fewer than ``minMember``
Running            at least ``minMember`` pods running or succeeded
Failed             a pod failed and running + succeeded + failed reach ``minMember``
Finished           at least ``minMember`` pods succeeded
=================  ==========================================================================

``running``, ``succeeded`` and ``failed`` count the pods; ``scheduleStartTime`` is when the
group was first seen. Binding the gang (all or nothing, giving up after
``scheduleTimeoutSeconds``) is the gang scheduler's work.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubehpc.api.errors import ApiError, Conflict, NotFound
from kubehpc.controllers.volcano.job_controller import now_rfc3339
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import Client, ListOptions

Obj = dict[str, Any]
log = logging.getLogger(__name__)

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
KIND = "PodGroup"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PERIOD_S = 2.0


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def phase_of(previous: str, min_member: int, pods: list[Obj]) -> tuple[str, int, int, int]:
    """(phase, running, succeeded, failed) of a group from its pods."""
    live = [p for p in pods if not _meta(p).get("deletionTimestamp")]
    phases = [str((p.get("status") or {}).get("phase") or "Pending") for p in live]
    running, succeeded, failed = phases.count("Running"), phases.count("Succeeded"), phases.count("Failed")
    placed = sum(1 for p in live if (p.get("spec") or {}).get("nodeName"))
    if len(live) < min_member:
        return "Pending", running, succeeded, failed
    if previous in ("", "Pending") and not placed:
        return "PreScheduling", running, succeeded, failed
    phase = "Scheduling" if running + succeeded < min_member else "Running"
    if failed and running + succeeded + failed >= min_member:
        phase = "Failed"
    if min_member and succeeded >= min_member:
        phase = "Finished"
    return phase, running, succeeded, failed


class CoschedulingStatus:
    def __init__(self, client: Client, now: Callable[[], str] = now_rfc3339) -> None:
        self.client = client
        self.now = now
        self._wake = threading.Event()

    def sync(self) -> None:
        groups = self.client.list(API_VERSION, KIND).items
        if not groups:
            return
        members: dict[tuple[str, str], list[Obj]] = {}
        for pod in self.client.list("v1", "Pod", ListOptions(label_selector=POD_GROUP_LABEL)).items:
            key = (
                str(_meta(pod).get("namespace") or "default"),
                str((_meta(pod).get("labels") or {})[POD_GROUP_LABEL]),
            )
            members.setdefault(key, []).append(pod)
        for pg in groups:
            key = (str(_meta(pg).get("namespace") or "default"), str(_meta(pg)["name"]))
            status = dict(pg.get("status") or {})
            min_member = int((pg.get("spec") or {}).get("minMember") or 0)
            phase, running, succeeded, failed = phase_of(
                str(status.get("phase") or ""), min_member, members.get(key, [])
            )
            new = {**status, "phase": phase, "running": running, "succeeded": succeeded, "failed": failed}
            new.setdefault("scheduleStartTime", self.now())
            if new == status:
                continue
            try:
                self.client.update_status({**pg, "status": new})
            except (Conflict, NotFound):
                self._wake.set()

    def run(self, stop: threading.Event) -> None:
        followers = Followers(self.client, read_only=True)  # handlers only wake the loop
        followers.start(stop, API_VERSION, KIND, self._on_change)
        # Only pods of a PodGroup matter (``_on_pod``): the store sends no others.
        followers.start(stop, "v1", "Pod", self._on_pod, POD_GROUP_LABEL)
        while not stop.is_set():
            self._wake.wait(PERIOD_S)
            if stop.is_set():
                break
            self._wake.clear()
            try:
                self.sync()
            except ApiError:
                log.exception("coscheduling PodGroup status failed; retrying")
            stop.wait(0.2)
        followers.stop()

    def _on_change(self, event_type: str, obj: Obj) -> None:
        self._wake.set()

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        if POD_GROUP_LABEL in (_meta(pod).get("labels") or {}):
            self._wake.set()


__all__ = ["CoschedulingStatus", "phase_of"]
