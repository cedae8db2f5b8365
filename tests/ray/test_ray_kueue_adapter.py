"""The RayJob as a Kueue job: its pod sets, suspension and completion."""

from __future__ import annotations

from typing import Any

from raykit import RAY, cluster_spec, worker_group

from kubehpc.controllers.kueue.jobframework import PodSetInfo
from kubehpc.controllers.kueue.jobs.rayjob import RayJobAdapter

Obj = dict[str, Any]


def rayjob(**spec: Any) -> Obj:
    group = worker_group("gpu", 2, 0, 4)
    group["numOfHosts"] = 2
    return {
        "apiVersion": RAY,
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": cluster_spec([group]), **spec},
    }


def test_pod_sets_are_the_head_each_worker_group_and_the_submitter() -> None:
    sets = RayJobAdapter(rayjob()).pod_sets()
    assert [(s["name"], s["count"]) for s in sets] == [("head", 1), ("gpu", 4), ("submitter", 1)]
    assert sets[2]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"


def test_http_mode_has_no_submitter_pod_set() -> None:
    names = [s["name"] for s in RayJobAdapter(rayjob(submissionMode="HTTPMode")).pod_sets()]
    assert names == ["head", "gpu"]


def test_admission_unsuspends_and_puts_the_flavors_node_selector_on_every_ray_template() -> None:
    job = RayJobAdapter(rayjob(suspend=True))
    infos = [PodSetInfo(s["name"], s["count"], node_selector={"pool": "a100"}) for s in job.pod_sets()]
    job.run_with_pod_set_info(infos)
    cluster = job.object["spec"]["rayClusterSpec"]
    assert job.object["spec"]["suspend"] is False
    assert cluster["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "a100"}
    assert cluster["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {"pool": "a100"}
    assert job.restore_pod_set_info([PodSetInfo(s["name"], s["count"]) for s in job.pod_sets()])
    assert "nodeSelector" not in cluster["headGroupSpec"]["template"]["spec"]


def test_finished_follows_the_job_deployment_status() -> None:
    obj = rayjob()
    obj["status"] = {"jobDeploymentStatus": "Running"}
    assert RayJobAdapter(obj).finished()[2] is False and RayJobAdapter(obj).is_active()
    obj["status"] = {"jobDeploymentStatus": "Complete"}
    assert RayJobAdapter(obj).finished() == ("RayJob finished", True, True)
    obj["status"] = {"jobDeploymentStatus": "Failed", "message": "boom"}
    assert RayJobAdapter(obj).finished() == ("boom", False, True)
