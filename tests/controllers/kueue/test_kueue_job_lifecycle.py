"""A queue-labelled batch/v1 Job through Kueue admission: held, admitted, run, finished."""

from __future__ import annotations

import re

from kueuekit import NS, KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.kueue.jobs import batchjob
from kubehpc.controllers.kueue.workloads import workload_name

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cluster(cpu: int = 4) -> KueueCluster:
    k = KueueCluster()
    k.create(
        flavor("on-demand", {"instance-type": "on-demand"}, [GPU_TOLERATION]),
        cluster_queue("cq", {"on-demand": {"cpu": cpu}}),
        local_queue("user-queue", "cq"),
    )
    return k


def test_a_queued_job_is_suspended_the_moment_it_is_created() -> None:
    k = cluster()
    created = k.create(queued_job("a"))[0]
    assert created["spec"]["suspend"] is True


def test_a_job_without_a_queue_label_is_left_to_run_at_once() -> None:
    k = cluster()
    job = queued_job("plain")
    del job["metadata"]["labels"]
    created = k.create(job)[0]
    k.settle()
    assert created["spec"].get("suspend") is False
    assert k.store.list("kueue.x-k8s.io/v1beta2", "Workload").items == []


def test_a_queued_job_gets_a_workload_named_and_owned_as_kueue_does_it() -> None:
    k = cluster()
    k.create(queued_job("train", parallelism=3))
    k.reconciler.reconcile(batchjob.INTEGRATION, NS, "train")
    job = k.job("train")
    wl = k.workload("train")
    assert re.fullmatch(r"job-train-[0-9a-f]{5}", wl["metadata"]["name"])
    assert wl["metadata"]["name"] == workload_name("train", job["metadata"]["uid"], "batch/v1", "Job")
    assert wl["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == job["metadata"]["uid"]
    assert wl["spec"]["queueName"] == "user-queue"
    [pod_set] = wl["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("main", 3)
    assert pod_set["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert ("CreatedWorkload", f"Created Workload: {NS}/{wl['metadata']['name']}") in k.events("train")


def test_an_admitted_job_is_unsuspended_with_the_flavors_node_selector_and_tolerations() -> None:
    k = cluster()
    k.create(queued_job("a", parallelism=2))
    k.settle()
    wl = k.workload("a")
    assert k.condition(wl, "QuotaReserved")["message"] == "Quota reserved in ClusterQueue cq"  # type: ignore[index]
    assert k.condition(wl, "Admitted")["reason"] == "Admitted"  # type: ignore[index]
    assert wl["status"]["admission"] == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "2"}, "count": 2}
        ],
    }
    job = k.job("a")
    assert job["spec"]["suspend"] is False
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == {"instance-type": "on-demand"}
    assert pod_spec["tolerations"] == [GPU_TOLERATION]
    assert [p["spec"]["nodeSelector"] for p in k.kubelet.active("a")] == [{"instance-type": "on-demand"}] * 2
    assert ("Started", "Admitted by clusterQueue cq") in k.events("a")


def test_a_job_that_completes_finishes_its_workload_and_frees_the_quota() -> None:
    k = cluster(cpu=2)
    k.submit(queued_job("first", parallelism=2), queued_job("second", parallelism=2))
    assert k.job("second")["spec"]["suspend"] is True
    k.finish_pods("first")
    k.settle()
    finished = k.condition(k.workload("first"), "Finished")
    assert finished is not None
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    assert k.job("second")["spec"]["suspend"] is False  # admitted on the quota "first" gave back


def test_a_job_that_fails_finishes_its_workload_as_failed() -> None:
    k = cluster()
    job = queued_job("doomed")
    job["spec"]["backoffLimit"] = 0
    k.create(job)
    k.settle()
    k.finish_pods("doomed", succeeded=False)
    k.settle()
    finished = k.condition(k.workload("doomed"), "Finished")
    assert finished is not None
    assert (finished["reason"], finished["message"]) == (
        "Failed",
        "Job has reached the specified backoff limit",
    )


def test_the_kueue_samples_apply_and_the_sample_job_runs(shared_dir) -> None:  # type: ignore[no-untyped-def]
    k = KueueCluster()
    samples = shared_dir / "samples" / "manifests" / "kueue" / "v1beta2"
    k.apply_yaml((samples / "single-clusterqueue-setup.yaml").read_text())
    [job] = k.apply_yaml((samples / "sample-job.yaml").read_text())
    k.settle()
    name = job["metadata"]["name"]
    assert k.job(name)["spec"]["suspend"] is False
    assert len(k.kubelet.active(name)) == 3


def test_a_job_resumed_by_hand_before_admission_is_suspended_again() -> None:
    k = cluster(cpu=1)
    k.submit(queued_job("first"), queued_job("second"))
    k.kubelet.patch_spec("second", suspend=False)
    k.settle()
    assert k.job("second")["spec"]["suspend"] is True
    assert k.kubelet.active("second") == []
    assert ("Stopped", "Not admitted by cluster queue") in k.events("second")


def test_a_waiting_job_whose_pod_count_changes_gets_a_new_workload() -> None:
    k = cluster(cpu=1)
    k.submit(queued_job("first"), queued_job("second", parallelism=1, completions=4))
    old_uid = k.workload("second")["metadata"]["uid"]
    k.kubelet.patch_spec("second", parallelism=2)
    k.settle()
    wl = k.workload("second")
    assert wl["metadata"]["uid"] != old_uid
    assert wl["spec"]["podSets"][0]["count"] == 2
