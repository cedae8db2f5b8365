"""Test kit for the Job controller: a Job controller on the in-memory Store, a hand-moved
clock, and a stand-in for the kubelet that sets pod status the way the node agent will."""

from __future__ import annotations

import copy
import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import Registry
from kubehpc.controllers.job import BackoffPolicy, FakeClock, JobController
from kubehpc.controllers.job import constants as c
from kubehpc.controllers.job.spec import format_time
from kubehpc.store.client import DeleteOptions, ListOptions
from kubehpc.store.events import EventRecorder
from kubehpc.store.store import Store

Obj = dict[str, Any]
NS = "default"


@functools.cache
def core_registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def job_manifest(name: str, *, containers: list[Obj] | None = None, **spec: Any) -> Obj:
    template_spec: Obj = {
        "restartPolicy": spec.pop("restartPolicy", "Never"),
        "containers": containers or [{"name": "main", "image": "busybox", "command": ["true"]}],
    }
    if "subdomain" in spec:
        template_spec["subdomain"] = spec.pop("subdomain")
    if "nodeName" in spec:
        # Pods already on a node are deleted gracefully: they stay "terminating" until the
        # kubelet (kill_terminating below) has stopped them.
        template_spec["nodeName"] = spec.pop("nodeName")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"spec": template_spec}, **spec},
    }


def load_manifest(path: Path) -> Obj:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert len(docs) == 1, path
    doc: Obj = docs[0]
    doc.setdefault("metadata", {}).setdefault("namespace", NS)
    return doc


class Cluster:
    """A Store, a Job controller on a FakeClock, and a hand-driven kubelet."""

    def __init__(self, store: Store | None = None, clock: FakeClock | None = None) -> None:
        self.store = store or Store(core_registry(), None)
        self.clock = clock or FakeClock(datetime.now(UTC).replace(microsecond=0))
        self.controller = self.new_controller()

    def new_controller(self, **kwargs: Any) -> JobController:
        """A fresh controller (as after a restart): it keeps nothing but what is stored."""
        kwargs.setdefault("backoff", BackoffPolicy(10.0, 360.0))
        return JobController(
            self.store, clock=self.clock, events=EventRecorder(self.store, "job-controller").record, **kwargs
        )

    # --- Jobs ------------------------------------------------------------------------------

    def create(self, manifest: Obj) -> Obj:
        return self.store.create(copy.deepcopy(manifest))

    def sync(self, name: str) -> float | None:
        return self.controller.reconcile(NS, name)

    def job(self, name: str) -> Obj:
        return self.store.get("batch/v1", "Job", name, NS)

    def status(self, name: str) -> Obj:
        return self.job(name).get("status") or {}

    def condition(self, name: str, ctype: str) -> Obj | None:
        for cond in self.status(name).get("conditions") or []:
            if cond["type"] == ctype:
                return dict(cond)
        return None

    def condition_types(self, name: str) -> list[str]:
        return [
            cond["type"] for cond in self.status(name).get("conditions") or [] if cond["status"] == "True"
        ]

    def patch_spec(self, name: str, **spec: Any) -> None:
        self.store.patch("batch/v1", "Job", name, {"spec": spec}, namespace=NS)

    def events(self, name: str) -> list[tuple[str, str]]:
        events = self.store.list("v1", "Event", ListOptions(namespace=NS)).items
        mine = [e for e in events if e["involvedObject"].get("name") == name]
        return [
            (e["reason"], e["message"])
            for e in sorted(mine, key=lambda e: int(e["metadata"]["resourceVersion"]))
        ]

    # --- Pods ------------------------------------------------------------------------------

    def pods(self, job_name: str) -> list[Obj]:
        items = self.store.list("v1", "Pod", ListOptions(namespace=NS)).items
        owned = [
            p
            for p in items
            if any(
                r.get("kind") == "Job" and r.get("name") == job_name
                for r in p["metadata"].get("ownerReferences") or []
            )
        ]
        return sorted(
            owned, key=lambda p: (index_of(p), p["metadata"]["creationTimestamp"], p["metadata"]["name"])
        )

    def active(self, job_name: str) -> list[Obj]:
        return [
            p
            for p in self.pods(job_name)
            if p["status"].get("phase") in ("Pending", "Running")
            and not p["metadata"].get("deletionTimestamp")
        ]

    def pod(self, name: str) -> Obj:
        return self.store.get("v1", "Pod", name, NS)

    def set_status(self, pod: Obj, status: Obj) -> Obj:
        fresh = self.pod(pod["metadata"]["name"])
        fresh["status"] = {**(fresh.get("status") or {}), **status}
        return self.store.update_status(fresh)

    def run(self, pod: Obj, ready: bool = True) -> Obj:
        now = format_time(self.clock.now())
        return self.set_status(
            pod,
            {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}
                ],
                "containerStatuses": [
                    {
                        **_image(ct),
                        "ready": ready,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": now}},
                    }
                    for ct in pod["spec"]["containers"]
                ],
            },
        )

    def finish(
        self,
        pod: Obj,
        exit_code: int = 0,
        *,
        conditions: list[Obj] | None = None,
        container: str | None = None,
    ) -> Obj:
        """The kubelet reports the pod's end: every container exited (``container`` alone
        with ``exit_code``, the others with 0 when given), phase Succeeded or Failed."""
        now = format_time(self.clock.now())
        statuses = []
        for ct in pod["spec"]["containers"]:
            code = exit_code if container in (None, ct["name"]) else 0
            reason = "Completed" if code == 0 else "Error"
            statuses.append(
                {
                    **_image(ct),
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": now}},
                }
            )
        conds = [{"type": "Ready", "status": "False", "lastTransitionTime": now}, *(conditions or [])]
        phase = "Succeeded" if exit_code == 0 else "Failed"
        return self.set_status(pod, {"phase": phase, "conditions": conds, "containerStatuses": statuses})

    def succeed(self, pod: Obj) -> Obj:
        return self.finish(pod, 0)

    def fail(self, pod: Obj, exit_code: int = 1, **kwargs: Any) -> Obj:
        return self.finish(pod, exit_code, **kwargs)

    def kill_terminating(self, job_name: str) -> None:
        """The kubelet stops every pod being deleted: phase Failed (exit code 137), then
        confirms the deletion with grace period 0."""
        for pod in self.pods(job_name):
            if pod["metadata"].get("deletionTimestamp") and pod["status"].get("phase") not in (
                "Succeeded",
                "Failed",
            ):
                self.finish(pod, 137)
                self.store.delete(
                    "v1", "Pod", pod["metadata"]["name"], NS, DeleteOptions(grace_period_seconds=0)
                )


def _image(container: Obj) -> Obj:
    return {
        "name": container["name"],
        "image": container["image"],
        "imageID": "kubehpc://" + container["image"],
    }


def index_of(pod: Obj) -> int:
    value = (pod["metadata"].get("annotations") or {}).get(c.COMPLETION_INDEX_KEY)
    return int(value) if value is not None else -1


def names(pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]
