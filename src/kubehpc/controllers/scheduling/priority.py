"""Pod priority from PriorityClasses: the Priority admission plugin's rules.

In Kubernetes the API server resolves ``spec.priorityClassName`` (or the ``globalDefault``
class) into ``spec.priority`` and ``spec.preemptionPolicy`` when a pod is created.
:func:`admit_pod_priority` does exactly that to a pod dict and is meant for the store's create
path; :func:`resolve_priority` answers the same question without changing the pod, for a
scheduler facing pods that were created before (or without) that step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import Forbidden

Obj = dict[str, Any]

# Built into every API server (scheduling.k8s.io/v1 SystemPriorityClasses).
SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
DEFAULT_PREEMPTION = "PreemptLowerPriority"


@dataclass(frozen=True)
class Resolved:
    class_name: str
    priority: int
    preemption_policy: str


def default_class(classes: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The globalDefault class; with several (a race the API allows), the lowest value wins."""
    best: dict[str, Any] | None = None
    for pc in classes:
        if pc.get("globalDefault") and (best is None or int(pc.get("value", 0)) < int(best.get("value", 0))):
            best = pc
    return best


def resolve_priority(spec: dict[str, Any], classes: Mapping[str, dict[str, Any]]) -> Resolved:
    """What admission gives a pod with ``spec``; ``classes`` maps class name -> PriorityClass.

    Raises ``Forbidden`` (as the admission plugin does) when the named class does not exist.
    """
    name = str(spec.get("priorityClassName") or "")
    if name in SYSTEM_CLASSES and name not in classes:
        return Resolved(name, SYSTEM_CLASSES[name], DEFAULT_PREEMPTION)
    if name:
        pc = classes.get(name)
        if pc is None:
            raise Forbidden(f"no PriorityClass with name {name} was found", kind="Pod")
    else:
        pc = default_class(classes.values())
        if pc is None:
            return Resolved("", 0, DEFAULT_PREEMPTION)
    meta = F.metadata(pc)
    return Resolved(
        str(meta.get("name", name)),
        int(pc.get("value", 0)),
        str(pc.get("preemptionPolicy") or DEFAULT_PREEMPTION),
    )


def admit_pod_priority(pod: Obj, classes: Mapping[str, dict[str, Any]]) -> None:
    """Fill ``spec.priority``, ``spec.priorityClassName`` and ``spec.preemptionPolicy`` of a
    pod being created, refusing values that contradict its class (the admission messages)."""
    spec = pod.setdefault("spec", {})
    resolved = resolve_priority(spec, classes)
    given = spec.get("priority")
    if given is not None and given != resolved.priority:
        raise Forbidden(
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {resolved.priority} from the given PriorityClass name",
            kind="Pod",
        )
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy != resolved.preemption_policy:
        raise Forbidden(
            f"the string value of PreemptionPolicy ({policy}) must not be provided in pod spec; "
            f"priority admission controller computed {resolved.preemption_policy} from the given "
            "PriorityClass name",
            kind="Pod",
        )
    if resolved.class_name:
        spec["priorityClassName"] = resolved.class_name
    spec["priority"] = resolved.priority
    spec["preemptionPolicy"] = resolved.preemption_policy
