"""Pod priority admission: priorityClassName (or the global default) becomes spec.priority."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Forbidden
from kubehpc.controllers.scheduling.priority import admit_pod_priority

CLASSES: dict[str, dict[str, Any]] = {
    "high": {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "PreemptLowerPriority"},
    "batch": {"metadata": {"name": "batch"}, "value": 10, "preemptionPolicy": "Never"},
}


def admitted(spec: dict[str, Any], classes: dict[str, dict[str, Any]] = CLASSES) -> dict[str, Any]:
    pod: dict[str, Any] = {"spec": dict(spec)}
    admit_pod_priority(pod, classes)
    return dict(pod["spec"])


def test_a_named_class_sets_priority_and_preemption_policy() -> None:
    spec = admitted({"priorityClassName": "batch"})
    assert (spec["priority"], spec["preemptionPolicy"]) == (10, "Never")


def test_without_a_class_or_default_the_priority_is_zero() -> None:
    assert admitted({})["priority"] == 0


def test_the_global_default_class_applies_to_pods_naming_none() -> None:
    classes = {
        **CLASSES,
        "default-a": {"metadata": {"name": "default-a"}, "value": 50, "globalDefault": True},
        "default-b": {"metadata": {"name": "default-b"}, "value": 40, "globalDefault": True},
    }
    spec = admitted({}, classes)
    assert (spec["priorityClassName"], spec["priority"]) == ("default-b", 40)  # the lowest default wins


def test_system_classes_exist_without_objects() -> None:
    assert admitted({"priorityClassName": "system-node-critical"}, {})["priority"] == 2000001000


def test_a_missing_class_is_refused() -> None:
    with pytest.raises(Forbidden, match="no PriorityClass with name gold was found"):
        admitted({"priorityClassName": "gold"})


def test_a_priority_contradicting_the_class_is_refused() -> None:
    with pytest.raises(Forbidden, match=r"the integer value of priority \(5\) must not be provided"):
        admitted({"priorityClassName": "high", "priority": 5})
