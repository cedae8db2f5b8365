"""The copies the Kueue loops change and write back. A status write reads only the status (and
the name and resourceVersion), so ``status_copy`` copies the status alone and leaves the rest,
a Workload's pod templates above all, shared with the read-only original."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubehpc.controllers.kueue import workloads as W

NOW = datetime(2026, 12, 4, tzinfo=UTC)


def workload() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "job-a", "namespace": "default", "generation": 1, "resourceVersion": "7"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]},
    }


def test_a_status_copy_owns_its_status_and_shares_the_rest() -> None:
    original = workload()
    copy = W.status_copy(original)
    assert copy["spec"] is original["spec"] and copy["metadata"] is original["metadata"]
    assert copy["status"] == original["status"] and copy["status"] is not original["status"]


def test_changing_the_status_of_a_status_copy_leaves_the_original_as_it_was() -> None:
    original = workload()
    before = W.private_copy(original)
    copy = W.status_copy(original)
    W.set_quota_reservation(copy, {"clusterQueue": "cq", "podSetAssignments": []}, NOW)
    assert W.has_quota_reservation(copy) and W.is_admitted(copy)
    assert original == before


def test_a_status_copy_of_a_workload_without_status_has_one_of_its_own() -> None:
    original = workload()
    del original["status"]
    copy = W.status_copy(original)
    W.set_finished(copy, True, "done", NOW)
    assert "status" not in original
    assert W.is_finished(copy)
