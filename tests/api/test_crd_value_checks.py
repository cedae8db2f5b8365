"""The value checks custom kinds' models run (quantities, timestamps, names): valid values are
remembered, a bad one is reported on every write, and pydantic calls them (compiled) with the
value alone."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import workloadkit as kit
from pydantic_core import PydanticCustomError

from kubehpc.api import crd_checks
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (crd_checks.check_dns_subdomain, "cq.team-a", "Team_A"),
        (crd_checks.check_dns_label, "team-a", "team.a"),
        (crd_checks.check_qualified_name, "example.com/gpu", "-gpu"),
        (crd_checks.check_date_time, "2026-12-07T01:00:00Z", "yesterday"),
    ],
)
def test_a_bad_value_is_reported_every_time_good_ones_are_remembered(
    check: Callable[[str], str], good: str, bad: str
) -> None:
    for _ in range(2):
        assert check(good) == good
        with pytest.raises(PydanticCustomError):
            check(bad)


def test_the_remembered_values_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crd_checks, "_SEEN_MAX", 4)
    monkeypatch.setattr(crd_checks, "_VALID_LABELS", {})
    for i in range(10):
        crd_checks.check_dns_label(f"q-{i}")
    assert len(crd_checks._VALID_LABELS) <= 4


def test_a_workload_naming_a_bad_cluster_queue_in_its_admission_is_invalid() -> None:
    registry = build_registry(("kubehpc.api.kinds.core", "kubehpc.api.kinds.kueue"))
    _, version = registry.for_kind("kueue.x-k8s.io/v1beta2", "Workload")
    admission = {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "count": 1}],
    }
    workload = kit.workload(kit.pod_set(), status={"admission": admission})
    assert version.validate(workload, FieldValidation.STRICT) == []
    workload["status"]["admission"]["clusterQueue"] = "CQ_1"
    with pytest.raises(Exception, match="clusterQueue"):
        version.validate(workload, FieldValidation.STRICT)
