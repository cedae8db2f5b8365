"""The job framework: what a job kind must offer to be queued, admitted and stopped by Kueue.

As Kueue's ``GenericJob``: each kind (batch/v1 Job here; MPIJob, RayJob later) wraps its
object in a small adapter with these methods, and one generic reconciler
(:mod:`kubehpc.controllers.kueue.reconciler`) does the rest: it makes the Workload, starts the
job when the Workload is admitted and stops it when the Workload is evicted. Adapters mutate
their object in place and never write; the reconciler writes.

Optional capabilities are separate protocols (Kueue's ``JobWithPriorityClass``,
``JobWithCustomStop``), in :mod:`kubehpc.controllers.kueue.jobprotocols`, asked through
:func:`priority_class_of` and :func:`custom_stop_of`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from mypy_extensions import mypyc_attr

from kubehpc.api import fields as F
from kubehpc.controllers.kueue import constants as k
from kubehpc.controllers.kueue.jobprotocols import GenericJob, JobWithCustomStop, JobWithPriorityClass

__all__ = [
    "GenericJob",
    "Integration",
    "JobWithCustomStop",
    "JobWithPriorityClass",
    "PodSetConflict",
    "PodSetInfo",
    "SpecJob",
    "custom_stop_of",
    "merge_into_template",
    "priority_class_of",
    "queue_name",
    "restore_template",
    "workload_priority_class",
]

Obj = dict[str, Any]


@dataclass
class PodSetInfo:
    """What admission adds to one pod set's template, or what restoring puts back (Kueue's
    ``podset.PodSetInfo``)."""

    name: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)

    @classmethod
    def original(cls, pod_set: dict[str, Any]) -> PodSetInfo:
        """The template as the job was queued (a Workload's spec.podSets entry)."""
        template = F.obj_field(pod_set, "template")
        meta = F.metadata(template)
        spec = F.spec(template)
        return cls(
            name=str(pod_set.get("name") or k.DEFAULT_POD_SET),
            count=int(pod_set.get("count", 1)),
            labels=dict(F.obj_field(meta, "labels")),
            annotations=dict(F.obj_field(meta, "annotations")),
            node_selector=dict(F.obj_field(spec, "nodeSelector")),
            tolerations=copy.deepcopy(list(spec.get("tolerations") or [])),
        )


class PodSetConflict(ValueError):
    """An admitted flavor's node labels contradict the pod template's own nodeSelector."""


def merge_into_template(template: Obj, info: PodSetInfo) -> None:
    """Add ``info``'s labels, annotations, nodeSelector and tolerations to a pod template
    (Kueue's ``podset.Merge``): a key already set to another value is a conflict."""
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    for where, what, extra in (
        (meta, "labels", info.labels),
        (meta, "annotations", info.annotations),
        (spec, "nodeSelector", info.node_selector),
    ):
        current: dict[str, str] = dict(where.get(what) or {})
        for key, value in extra.items():
            if key in current and current[key] != value:
                raise PodSetConflict(
                    f"conflict for {what}: {key}={current[key]} in the template, {key}={value} admitted"
                )
            current[key] = value
        if current:
            where[what] = current
    tolerations = list(spec.get("tolerations") or [])
    for toleration in info.tolerations:
        if toleration not in tolerations:
            tolerations.append(copy.deepcopy(toleration))
    if tolerations:
        spec["tolerations"] = tolerations


def restore_template(template: Obj, info: PodSetInfo) -> bool:
    """Put back the queued template's labels, annotations, nodeSelector and tolerations
    (Kueue's ``podset.RestorePodSpec``); returns whether anything changed."""
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    changed = False
    for where, what, original in (
        (meta, "labels", info.labels),
        (meta, "annotations", info.annotations),
        (spec, "nodeSelector", info.node_selector),
    ):
        if dict(where.get(what) or {}) != original:
            changed = True
            if original:
                where[what] = dict(original)
            else:
                where.pop(what, None)
    if list(spec.get("tolerations") or []) != info.tolerations:
        changed = True
        if info.tolerations:
            spec["tolerations"] = copy.deepcopy(info.tolerations)
        else:
            spec.pop("tolerations", None)
    if not meta:
        template.pop("metadata", None)
    return changed


# Its subclass BatchJob is subclassed outside the compiled modules (cluster mode's GatedJob).
@mypyc_attr(allow_interpreted_subclasses=True)
class SpecJob:
    """The plumbing every adapter shares: the wrapped object and its ``spec``; suspension is
    ``spec.suspend`` unless a kind keeps it elsewhere (the MPIJob's ``runPolicy``)."""

    def __init__(self, obj: Obj) -> None:
        self._obj = obj

    @property
    def object(self) -> Obj:
        return self._obj

    @property
    def spec(self) -> Obj:
        spec: Obj = self._obj.setdefault("spec", {})
        return spec

    def is_suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    def suspend(self) -> None:
        self.spec["suspend"] = True


@dataclass(frozen=True)
class Integration:
    """A job kind Kueue manages (Kueue's ``IntegrationCallbacks``)."""

    api_version: str
    kind: str
    new_job: Callable[[Obj], GenericJob]

    def owns(self, ref: dict[str, Any]) -> bool:
        return ref.get("kind") == self.kind and ref.get("apiVersion") == self.api_version


# (adapter class, capability protocol) -> whether the class offers it. An adapter's methods are
# its class's, so the answer holds for every object of the class.
_OFFERS: dict[tuple[type, type], bool] = {}


def _offers(job: GenericJob, capability: type) -> bool:
    """``isinstance(job, capability)`` for a runtime-checkable protocol, remembered per
    adapter class: the ``isinstance`` looks up each of the protocol's methods every time."""
    key = (type(job), capability)
    found = _OFFERS.get(key)
    if found is None:
        found = _OFFERS[key] = isinstance(job, capability)
    return found


def priority_class_of(job: GenericJob) -> str:
    """The pods' PriorityClass name as the kind keeps it ("" for none, or a kind without)."""
    return cast(JobWithPriorityClass, job).priority_class() if _offers(job, JobWithPriorityClass) else ""


def custom_stop_of(job: GenericJob) -> JobWithCustomStop | None:
    """The job as one that stops in its own order, or None for the generic stop."""
    return cast(JobWithCustomStop, job) if _offers(job, JobWithCustomStop) else None


def queue_name(obj: dict[str, Any]) -> str:
    """The LocalQueue a job is submitted to ("" when Kueue does not manage it)."""
    return str(F.labels(obj).get(k.QUEUE_NAME_LABEL) or "")


def workload_priority_class(obj: dict[str, Any]) -> str:
    labels = F.labels(obj)
    return str(labels.get(k.PRIORITY_CLASS_LABEL) or "")
