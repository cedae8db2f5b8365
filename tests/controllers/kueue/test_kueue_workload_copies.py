"""The copies the Kueue loops change and write back. A status write reads only the status (and
the name and resourceVersion), so ``status_copy`` copies the status alone and leaves the rest,
a Workload's pod templates above all, shared with the read-only original. A job's pod sets are
read from its templates as they are (most reads only compare them with the Workload's); the
Workload made from them gets templates of its own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kueuekit import NS, KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.kueue import workloads as W
from kubehpc.controllers.kueue.jobs import batchjob
from kubehpc.store.client import ListOptions

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


def test_a_jobs_pod_sets_are_read_from_its_template_without_copying_it() -> None:
    job = queued_job("train")
    [pod_set] = batchjob.new_job(job).pod_sets()
    assert pod_set["template"] is job["spec"]["template"]


def test_a_new_workload_has_pod_templates_of_its_own_not_the_jobs() -> None:
    k = KueueCluster()
    k.create(cluster_queue("cq", {"default": {"cpu": 4}}), flavor("default"), local_queue("user-queue", "cq"))
    k.create(queued_job("train"))
    k.reconciler.reconcile(batchjob.INTEGRATION, NS, "train")
    job = k.store.get("batch/v1", "Job", "train", NS, read_only=True)
    [wl] = k.store.list("kueue.x-k8s.io/v1beta2", "Workload", ListOptions(read_only=True)).items
    template = wl["spec"]["podSets"][0]["template"]
    assert template == job["spec"]["template"] and template is not job["spec"]["template"]
    assert template["spec"] is not job["spec"]["template"]["spec"]
