"""A queue-labelled batch/v1 Job on the real API server: admitted by kubehpc within its
ClusterQueue's quota and held when over it; its pods bound by kubehpc to virtual-kubelet nodes,
run there, and the Job completes through the cluster's own Job controller."""

from __future__ import annotations

from typing import Any

from k8skit import K8sEnv, Proc, condition, job, queues, wait_for

from kubehpc.api.errors import AlreadyExists
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

KUEUE = "kueue.x-k8s.io/v1beta1"


def pods_of(api: RestClient, job_name: str) -> list[dict[str, Any]]:
    return api.list(
        "v1", "Pod", ListOptions(namespace="default", label_selector=f"job-name={job_name}")
    ).items


def workload_of(api: RestClient, job_name: str) -> dict[str, Any] | None:
    for wl in api.list(KUEUE, "Workload", ListOptions(namespace="default")).items:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("name") == job_name for o in owners):
            return wl
    return None


def ensure(api: RestClient, objs: list[dict[str, Any]]) -> None:
    for obj in objs:
        try:
            api.create(obj)
        except AlreadyExists:
            pass


def test_job_within_quota_runs_and_one_over_quota_waits(
    controller: Proc, nodes: Proc, api: RestClient, k8s: K8sEnv
) -> None:
    ensure(api, queues("2", name="admit"))
    api.create(job("first", "admit", 2, "1", ["sh", "-c", "sleep 4"]))
    wait_for(
        "the first Job's Workload to be admitted",
        lambda: condition(workload_of(api, "first"), "Admitted") == "True",
    )
    api.create(job("second", "admit", 2, "1", ["sh", "-c", "true"]))

    def first_running() -> bool:
        pods = pods_of(api, "first")
        return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

    wait_for("the first Job's pods to run on the virtual nodes", first_running, timeout=90)
    assert {p["spec"]["nodeName"] for p in pods_of(api, "first")} <= {"vk-0", "vk-1"}

    # Over quota while the first runs: a Workload, not admitted, and its pods held unbound.
    wait_for("the second Job's Workload", lambda: workload_of(api, "second"))
    wait_for("the second Job's pods to exist", lambda: len(pods_of(api, "second")) == 2)
    assert condition(workload_of(api, "second"), "Admitted") != "True"
    assert all(not p["spec"].get("nodeName") for p in pods_of(api, "second"))

    def complete(name: str) -> bool:
        return condition(api.get("batch/v1", "Job", name, "default"), "Complete") == "True"

    wait_for("the first Job to complete through the Job controller", lambda: complete("first"), timeout=120)
    wait_for(
        "the second Job to be admitted once quota is free",
        lambda: condition(workload_of(api, "second"), "Admitted") == "True",
        timeout=60,
    )
    wait_for("the second Job to complete", lambda: complete("second"), timeout=120)

    # kubectl shows it all.
    jobs = k8s.kubectl("get", "jobs", "-n", "default", "-o", "wide")
    assert "first" in jobs and "second" in jobs
    workloads = k8s.kubectl("get", "workloads.kueue.x-k8s.io", "-n", "default")
    assert "admit" in workloads
    pods = k8s.kubectl("get", "pods", "-n", "default", "-l", "job-name=first", "-o", "wide")
    assert "Completed" in pods and "vk-" in pods
    events = k8s.kubectl(
        "get", "events", "-n", "default", "--field-selector", "reason=Scheduled",
        "-o", "custom-columns=POD:.involvedObject.name,FROM:.source.component",
    )  # fmt: skip
    assert any(line.startswith("first-") and line.split()[-1] == "kubehpc" for line in events.splitlines())


def test_job_without_queue_label_is_scheduled_at_once(controller: Proc, nodes: Proc, api: RestClient) -> None:
    api.create(job("plain", "", 1, "500m", ["sh", "-c", "echo hello"]))
    wait_for(
        "the unqueued Job to complete",
        lambda: condition(api.get("batch/v1", "Job", "plain", "default"), "Complete") == "True",
        timeout=90,
    )
    assert workload_of(api, "plain") is None
