"""Writing the core's decisions through a Client: bindings, PodScheduled conditions, Events.

Binding follows the API: ``create`` of a ``v1 Binding`` named after the pod (what
``POST pods/<name>/binding`` and ``POST namespaces/<ns>/bindings`` receive), carrying the
chosen devices as a pod annotation, which the API server copies onto the pod. A store that does
not serve Binding gets a merge patch of ``spec.nodeName`` instead, guarded by the pod's
resourceVersion so a pod that changed (or was bound) meanwhile is never bound twice.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from kubehpc.api import fields as F
from kubehpc.api.devices import POD_DEVICES_ANNOTATION
from kubehpc.api.errors import AlreadyExists, ApiError, BadRequest
from kubehpc.store.client import Client, PatchType
from kubehpc.store.events import CHECKED_EVENT_WRITE, event_name, event_write
from kubehpc.store.strategy import rfc3339

Obj = dict[str, Any]
Devices = tuple[tuple[str, tuple[str, ...]], ...]
SCHEDULER_COMPONENT = "default-scheduler"


class BindMode(enum.StrEnum):
    BINDING = "Binding"  # create a v1 Binding (any Kubernetes API server)
    PATCH = "Patch"  # merge-patch spec.nodeName (an embedded store without Binding)
    AUTO = "Auto"  # Binding, falling back to Patch once the store says it has no such kind


def device_annotations(devices: Devices) -> dict[str, str]:
    if not devices:
        return {}
    ids = {container: list(ids) for container, ids in devices}
    return {POD_DEVICES_ANNOTATION: json.dumps(ids, separators=(",", ":"))}


def binding_object(pod: dict[str, Any], node: str, devices: Devices) -> Obj:
    """The ``v1 Binding`` of ``pod`` (as last seen: its uid guards against a namesake) to ``node``."""
    meta = F.metadata(pod)
    binding: Obj = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid")},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    annotations = device_annotations(devices)
    if annotations:
        binding["metadata"]["annotations"] = annotations
    return binding


# Subclassed outside the compiled modules: cluster mode's PipelinedBinder (kube/binding.py).
@mypyc_attr(allow_interpreted_subclasses=True)
class Binder:
    def __init__(self, client: Client, mode: BindMode = BindMode.AUTO) -> None:
        self.client = client
        self.mode = mode

    def bind(self, pod: Obj, node: str, devices: Devices) -> None:
        """Bind ``pod`` (as last seen) to ``node``; raises ApiError when the API refuses."""
        meta = F.metadata(pod)
        annotations = device_annotations(devices)
        if self.mode is not BindMode.PATCH:
            try:
                self.client.create(binding_object(pod, node, devices))
                return
            except BadRequest as err:
                if self.mode is BindMode.BINDING or '"Binding"' not in str(err):
                    raise
                self.mode = BindMode.PATCH
        patch: Obj = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "spec": {"nodeName": node},
        }
        if annotations:
            patch["metadata"]["annotations"] = annotations
        self.client.patch("v1", "Pod", str(meta.get("name")), patch, PatchType.MERGE, meta.get("namespace"))


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for cond in F.object_list(F.status(pod), "conditions"):
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


def needs_unschedulable_update(pod: dict[str, Any], message: str) -> bool:
    cond = scheduled_condition(pod)
    return not (
        cond is not None
        and cond.get("status") == "False"
        and cond.get("reason") == "Unschedulable"
        and cond.get("message") == message
    )


def mark_unschedulable(client: Client, pod: dict[str, Any], message: str, now: float) -> Obj:
    """PodScheduled=False, reason Unschedulable, with the core's message (strategic merge on
    the status subresource, so other conditions stay as they are)."""
    meta = F.metadata(pod)
    before = scheduled_condition(pod)
    transition = rfc3339(now)
    if before is not None and before.get("status") == "False" and before.get("lastTransitionTime"):
        transition = str(before["lastTransitionTime"])
    patch = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": transition,
                }
            ]
        }
    }
    return client.patch(
        "v1",
        "Pod",
        str(meta.get("name")),
        patch,
        PatchType.STRATEGIC,
        meta.get("namespace"),
        subresource="status",
    )


def record_event(
    client: Client,
    pod: dict[str, Any],
    event_type: str,
    reason: str,
    message: str,
    now: float,
    on_error: Callable[[ApiError], None] | None = None,
) -> None:
    """A core/v1 Event about ``pod`` from the default scheduler (``kubectl describe`` shows it)."""
    meta = F.metadata(pod)
    namespace = meta.get("namespace") or "default"
    stamp = rfc3339(now)

    involved = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": meta.get("name"),
        "namespace": namespace,
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }

    def event(name: dict[str, str]) -> Obj:  # afresh for each create: the store keeps it
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {**name, "namespace": namespace},
            "involvedObject": dict(involved),
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": SCHEDULER_COMPONENT},
            "reportingComponent": SCHEDULER_COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }

    try:
        try:
            # Named as client-go's recorder names events (no server-side search for a free name).
            options = event_write(involved, namespace, event_type, reason, message)
            client.create(event({"name": event_name(str(meta.get("name") or ""))}), options)
        except AlreadyExists:  # two events of one pod in one nanosecond
            client.create(event({"generateName": f"{meta.get('name')}."}), CHECKED_EVENT_WRITE)
    except ApiError as err:  # an event is a courtesy; losing one must not stop scheduling
        if on_error is not None:
            on_error(err)
