"""Valid inputs of a frozen model remembered by their JSON (a Workload's pod set assignments):
built once and handed back, while an invalid one is reported on every write and the rules of
the objects around a remembered one still run."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import workloadkit as kit

from kubehpc.api import crd_checks
from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.kinds.kueue import workload as workload_models
from kubehpc.api.registry import FieldValidation

Obj = dict[str, Any]

ASSIGNMENT: Obj = {
    "name": "main",
    "flavors": {"cpu": "default"},
    "resourceUsage": {"cpu": "100m"},
    "count": 2,
    "topologyAssignment": {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 1,
                "podCounts": {"universal": 2},
                "valuesPerLevel": [{"universal": "node-0"}],
            }
        ],
    },
}


def admitted_workload(assignment: Obj, pods: int = 2) -> Obj:
    admission = {"clusterQueue": "cq", "podSetAssignments": [copy.deepcopy(assignment)]}
    return kit.workload(kit.pod_set(count=pods), status={"admission": admission})


def validate(obj: Obj) -> list[str]:
    registry = build_registry(("kubehpc.api.kinds.core", "kubehpc.api.kinds.kueue"))
    _, version = registry.for_kind("kueue.x-k8s.io/v1beta2", "Workload")
    return version.validate(obj, FieldValidation.STRICT)


class Built:
    """A stand-in model: counts what it builds, refuses ``n`` of -1."""

    def __init__(self) -> None:
        self.built: list[Obj] = []

    def __call__(self, value: Any) -> object:
        if isinstance(value, dict) and value.get("n") == -1:
            raise ValueError("n must not be negative")
        self.built.append(value)
        return object()


def test_a_valid_input_seen_before_gets_the_instance_built_the_first_time() -> None:
    remembered, build = crd_checks.RememberedValid(), Built()
    first = remembered.validate({"n": 1}, build)
    again = remembered.validate({"n": 1}, build)
    assert again is first
    assert len(build.built) == 1


def test_an_invalid_input_is_reported_every_time() -> None:
    remembered, build = crd_checks.RememberedValid(), Built()
    for _ in range(2):
        with pytest.raises(ValueError, match="negative"):
            remembered.validate({"n": -1}, build)
    assert len(remembered) == 0


def test_inputs_that_differ_in_type_are_not_taken_for_each_other() -> None:
    remembered, build = crd_checks.RememberedValid(), Built()
    remembered.validate({"n": 1}, build)
    remembered.validate({"n": "1"}, build)
    remembered.validate({"n": 1.0}, build)
    assert len(build.built) == 3


def test_what_is_not_a_plain_json_object_is_always_built() -> None:
    remembered, build = crd_checks.RememberedValid(), Built()
    for value in ([1], {"n": {1, 2}}, {"n": {1, 2}}):
        remembered.validate(value, build)
    assert len(build.built) == 3
    assert len(remembered) == 0


def test_the_remembered_inputs_are_bounded() -> None:
    remembered, build = crd_checks.RememberedValid(limit=4), Built()
    for n in range(10):
        remembered.validate({"n": n}, build)
    assert len(remembered) <= 4


def test_a_workloads_pod_set_assignment_is_checked_once_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workload_models, "_ASSIGNMENTS", crd_checks.RememberedValid())
    assert validate(admitted_workload(ASSIGNMENT)) == []
    assert validate(admitted_workload(ASSIGNMENT)) == []
    assert len(workload_models._ASSIGNMENTS) == 1


def test_a_remembered_assignment_still_answers_to_the_workloads_own_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workload_models, "_ASSIGNMENTS", crd_checks.RememberedValid())
    assert validate(admitted_workload(ASSIGNMENT)) == []
    # Two assignments for one pod set, with the quota reserved: the Workload's own rule.
    mismatched = admitted_workload(ASSIGNMENT)
    mismatched["status"]["admission"]["podSetAssignments"].append(copy.deepcopy(ASSIGNMENT))
    mismatched["status"]["conditions"] = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "reserved",
            "lastTransitionTime": "2026-12-07T01:00:00Z",
        }
    ]
    with pytest.raises(Invalid, match="podSetAssignments"):
        validate(mismatched)


def test_an_invalid_assignment_is_reported_after_a_valid_one_of_the_same_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workload_models, "_ASSIGNMENTS", crd_checks.RememberedValid())
    assert validate(admitted_workload(ASSIGNMENT)) == []
    bad = copy.deepcopy(ASSIGNMENT)
    bad["topologyAssignment"]["slices"][0]["podCounts"] = {"universal": 2, "individual": [2]}
    for _ in range(2):
        with pytest.raises(Invalid, match="exactly one of the fields"):
            validate(admitted_workload(bad))
