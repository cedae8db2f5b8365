"""The RayCluster and RayJob controllers on the in-memory store, without Ray: the pod status a
kubelet would write is set by hand and the dashboard is a stand-in, so each rule is checked
on its own in milliseconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from raykit import NS, RAY, cluster_spec, raycluster, worker_group

from kubehpc.api.kinds import default_registry
from kubehpc.controllers.ray import RayClusterController, RayClusterOptions, RayJobController
from kubehpc.controllers.ray.dashboard import JobInfo
from kubehpc.controllers.ray.objects import HostMode
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Store:
    return Store(default_registry(), None)


def pods(store: Store, selector: str = "") -> list[Obj]:
    return store.list("v1", "Pod", ListOptions(namespace=NS, label_selector=selector)).items


def run_all(store: Store) -> None:
    """What the kubelet reports once every container runs and is ready."""
    for pod in pods(store):
        pod["status"] = {
            "phase": "Running",
            "podIP": "10.0.0.9",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        store.update_status(pod)


def events(store: Store, reason: str) -> list[str]:
    return [e["message"] for e in store.list("v1", "Event").items if e.get("reason") == reason]


def test_cluster_gets_a_head_a_service_and_its_workers_then_becomes_ready(store: Store) -> None:
    ctl = RayClusterController(store)
    store.create(raycluster("rc", cluster_spec([worker_group("small", 2, 0, 3)])))
    ctl.reconcile(NS, "rc")
    assert [p["metadata"]["labels"]["ray.io/node-type"] for p in pods(store)].count("worker") == 2
    head = pods(store, "ray.io/node-type=head")[0]
    assert head["metadata"]["labels"]["ray.io/cluster"] == "rc"
    worker = pods(store, "ray.io/group=small")[0]
    env = {e["name"]: e.get("value") for e in worker["spec"]["containers"][0]["env"]}
    assert env["RAY_ADDRESS"] == "rc-head-svc.default.svc.cluster.local:6379"  # a real cluster's DNS
    assert worker["spec"]["containers"][0]["command"] == ["/bin/bash", "-lc", "--"]
    assert store.get("v1", "Service", "rc-head-svc", NS)["spec"]["selector"] == {
        "ray.io/cluster": "rc",
        "ray.io/node-type": "head",
    }
    assert store.get(RAY, "RayCluster", "rc", NS)["status"].get("state") != "ready"
    run_all(store)
    ctl.reconcile(NS, "rc")
    st = store.get(RAY, "RayCluster", "rc", NS)["status"]
    assert (st["state"], st["desiredWorkerReplicas"], st["availableWorkerReplicas"]) == ("ready", 2, 2)
    assert st["endpoints"]["gcs-server"] == "6379" and st["head"]["podIP"] == "10.0.0.9"
    assert st["desiredCPU"] == "300m"


def test_replicas_are_clamped_to_min_and_max_and_num_of_hosts_multiplies(store: Store) -> None:
    group = worker_group("multi", 9, 1, 2)
    group["numOfHosts"] = 2
    store.create(raycluster("rc", cluster_spec([group])))
    RayClusterController(store).reconcile(NS, "rc")
    assert len(pods(store, "ray.io/group=multi")) == 4


def test_suspend_deletes_every_pod_and_reports_suspended(store: Store) -> None:
    ctl = RayClusterController(store)
    store.create(raycluster("rc", cluster_spec([worker_group("small", 1, 0, 1)])))
    ctl.reconcile(NS, "rc")
    rc = store.get(RAY, "RayCluster", "rc", NS)
    rc["spec"]["suspend"] = True
    store.update(rc)
    ctl.reconcile(NS, "rc")
    assert not [p for p in pods(store) if not p["metadata"].get("deletionTimestamp")]
    assert store.get(RAY, "RayCluster", "rc", NS)["status"]["state"] == "suspended"


def test_workers_to_delete_removes_exactly_the_named_pods(store: Store) -> None:
    ctl = RayClusterController(store)
    spec = cluster_spec([worker_group("small", 3, 0, 3)], enableInTreeAutoscaling=True)
    store.create(raycluster("rc", spec))
    ctl.reconcile(NS, "rc")
    victim = pods(store, "ray.io/group=small")[1]["metadata"]["name"]
    rc = store.get(RAY, "RayCluster", "rc", NS)
    rc["spec"]["workerGroupSpecs"][0].update(replicas=2, scaleStrategy={"workersToDelete": [victim]})
    store.update(rc)
    ctl.reconcile(NS, "rc")
    left = [
        p["metadata"]["name"]
        for p in pods(store, "ray.io/group=small")
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert len(left) == 2 and victim not in left


def test_a_missing_ray_executable_fails_the_cluster_with_a_condition_and_an_event(store: Store) -> None:
    mode = HostMode(host_processes=True, ray_bin="ray-not-installed-here", path="/nonexistent")
    ctl = RayClusterController(store, RayClusterOptions(mode=mode))
    store.create(raycluster("rc", cluster_spec()))
    ctl.reconcile(NS, "rc")
    st = store.get(RAY, "RayCluster", "rc", NS)["status"]
    assert st["state"] == "failed" and "ray-not-installed-here" in st["reason"]
    assert any(c["type"] == "HeadPodReady" and c["reason"] == "RayBinaryNotFound" for c in st["conditions"])
    assert events(store, "RayBinaryNotFound") and not pods(store)


class FakeDashboard:
    """The job submission API of one cluster: jobs move only when the test says so."""

    def __init__(self) -> None:
        self.jobs: dict[str, str] = {}
        self.submitted: list[Obj] = []
        self.stopped: list[str] = []

    def __call__(self, address: str) -> FakeDashboard:
        return self

    def submit_job(self, request: Obj) -> None:
        self.submitted.append(request)
        self.jobs[request["submission_id"]] = "PENDING"

    def job_info(self, submission_id: str) -> JobInfo | None:
        status = self.jobs.get(submission_id)
        return (
            None
            if status is None
            else JobInfo(status, "", 1_000, 2_000 if status == "SUCCEEDED" else None, {})
        )

    def stop_job(self, submission_id: str) -> None:
        self.stopped.append(submission_id)
        self.jobs[submission_id] = "STOPPED"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def rayjob(**spec: Any) -> Obj:
    body = {
        "entrypoint": "python run.py",
        "submissionMode": "HTTPMode",
        "rayClusterSpec": cluster_spec(),
        **spec,
    }
    return {"apiVersion": RAY, "kind": "RayJob", "metadata": {"name": "job", "namespace": NS}, "spec": body}


def step(store: Store, ctl: RayJobController, cluster_ctl: RayClusterController, rounds: int = 6) -> Obj:
    for _ in range(rounds):
        ctl.reconcile(NS, "job")
        for rc in store.list(RAY, "RayCluster").items:
            cluster_ctl.reconcile(NS, rc["metadata"]["name"])
        run_all(store)
    status: Obj = store.get(RAY, "RayJob", "job", NS)["status"]
    return status


def test_rayjob_deployment_states_through_http_mode_and_cluster_shutdown(store: Store) -> None:
    dash, clock = FakeDashboard(), Clock()
    ctl, cctl = RayJobController(store, dashboard=dash, clock=clock), RayClusterController(store)
    store.create(rayjob(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10, runtimeEnvYAML="pip: [x]"))
    st = step(store, ctl, cctl)
    assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Running", "PENDING")
    assert dash.submitted[0]["entrypoint"] == "python run.py" and dash.submitted[0]["runtime_env"] == {
        "pip": ["x"]
    }
    dash.jobs[st["jobId"]] = "SUCCEEDED"
    st = step(store, ctl, cctl)
    assert (st["jobDeploymentStatus"], st["jobStatus"], st["succeeded"]) == ("Complete", "SUCCEEDED", 1)
    assert store.list(RAY, "RayCluster").items  # ttlSecondsAfterFinished not yet over
    clock.now += 11
    step(store, ctl, cctl, rounds=1)
    assert not store.list(RAY, "RayCluster").items


def test_failed_rayjob_retries_up_to_backoff_limit_on_a_new_cluster(store: Store) -> None:
    dash = FakeDashboard()
    ctl, cctl = RayJobController(store, dashboard=dash, clock=Clock()), RayClusterController(store)
    store.create(rayjob(backoffLimit=1))
    first = step(store, ctl, cctl)
    dash.jobs[first["jobId"]] = "FAILED"
    second = step(store, ctl, cctl, rounds=10)
    assert second["jobDeploymentStatus"] == "Running" and second["failed"] == 1
    assert second["rayClusterName"] != first["rayClusterName"]
    dash.jobs[second["jobId"]] = "FAILED"
    final = step(store, ctl, cctl)
    assert (final["jobDeploymentStatus"], final["failed"], final["reason"]) == ("Failed", 2, "AppFailed")


def test_active_deadline_fails_the_job_and_stops_it(store: Store) -> None:
    dash, clock = FakeDashboard(), Clock()
    ctl, cctl = RayJobController(store, dashboard=dash, clock=clock), RayClusterController(store)
    store.create(rayjob(activeDeadlineSeconds=30))
    st = step(store, ctl, cctl)
    clock.now += 31
    st = step(store, ctl, cctl, rounds=1)
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "DeadlineExceeded")
    assert dash.stopped == [st["jobId"]]


def test_suspending_a_running_rayjob_deletes_its_cluster_and_resuming_starts_over(store: Store) -> None:
    dash = FakeDashboard()
    ctl, cctl = RayJobController(store, dashboard=dash, clock=Clock()), RayClusterController(store)
    store.create(rayjob())
    step(store, ctl, cctl)
    job = store.get(RAY, "RayJob", "job", NS)
    job["spec"]["suspend"] = True
    store.update(job)
    st = step(store, ctl, cctl)
    assert st["jobDeploymentStatus"] == "Suspended" and not store.list(RAY, "RayCluster").items
    job = store.get(RAY, "RayJob", "job", NS)
    job["spec"]["suspend"] = False
    store.update(job)
    assert step(store, ctl, cctl)["jobDeploymentStatus"] == "Running"


def test_k8s_job_mode_creates_a_submitter_job_running_ray_job_submit(store: Store) -> None:
    ctl, cctl = RayJobController(store, dashboard=FakeDashboard(), clock=Clock()), RayClusterController(store)
    store.create(rayjob(submissionMode="K8sJobMode", runtimeEnvYAML="env_vars: {A: b}"))
    st = step(store, ctl, cctl)
    sub = store.get("batch/v1", "Job", "job", NS)
    args = sub["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "ray job submit --address http://$RAY_DASHBOARD_ADDRESS" in args
    assert "--runtime-env-json" in args
    assert "--submission-id $RAY_JOB_SUBMISSION_ID -- python run.py" in args
    env = {e["name"]: e["value"] for e in sub["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["RAY_JOB_SUBMISSION_ID"] == st["jobId"]
    assert sub["metadata"]["ownerReferences"][0]["kind"] == "RayJob"


def test_the_seeds_raycluster_creates_what_kuberay_creates(store: Store) -> None:
    seed = Path(__file__).resolve().parents[2] / "examples" / "seed" / "raycluster.yaml"
    doc = yaml.safe_load(seed.read_text())
    doc["metadata"]["namespace"] = NS
    store.create(doc)
    RayClusterController(store).reconcile(NS, "ray-test")
    workers = pods(store, "ray.io/cluster=ray-test,ray.io/group=workers")
    head = pods(store, "ray.io/cluster=ray-test,ray.io/node-type=head")
    assert len(workers) == 4 and len(head) == 1
    args = head[0]["spec"]["containers"][0]["args"][0]
    assert "--dashboard-host=0.0.0.0" in args and "--num-cpus=4" in args and "--num-gpus=1" in args
    assert "--num-gpus=2" in workers[0]["spec"]["containers"][0]["args"][0]
    assert store.get("v1", "Service", "ray-test-head-svc", NS)
    st = store.get(RAY, "RayCluster", "ray-test", NS)["status"]
    assert (st["desiredCPU"], st["desiredGPU"], st["desiredWorkerReplicas"]) == ("36", "9", 4)


def test_cluster_selector_runs_the_job_on_an_existing_cluster_and_never_deletes_it(store: Store) -> None:
    dash, clock = FakeDashboard(), Clock()
    ctl, cctl = RayJobController(store, dashboard=dash, clock=clock), RayClusterController(store)
    job = rayjob(clusterSelector={"ray.io/cluster": "shared"})
    del job["spec"]["rayClusterSpec"]
    store.create(job)
    st = step(store, ctl, cctl, rounds=2)
    # The named cluster does not exist yet: the job waits for it and makes none of its own.
    assert (st["jobDeploymentStatus"], st["rayClusterName"]) == ("Initializing", "shared")
    assert "clusterSelector" in st["message"] and not store.list(RAY, "RayCluster").items
    store.create(raycluster("shared", cluster_spec()))
    st = step(store, ctl, cctl)
    assert (st["jobDeploymentStatus"], st["rayClusterName"]) == ("Running", "shared")
    assert [c["metadata"]["name"] for c in store.list(RAY, "RayCluster").items] == ["shared"]
    dash.jobs[st["jobId"]] = "SUCCEEDED"
    clock.now += 600
    st = step(store, ctl, cctl)
    assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert [c["metadata"]["name"] for c in store.list(RAY, "RayCluster").items] == ["shared"]
    assert len(pods(store, "ray.io/cluster=shared")) == 1  # its head still runs


def test_a_cluster_selector_without_the_cluster_key_ends_validation_failed(store: Store) -> None:
    ctl = RayJobController(store, dashboard=FakeDashboard(), clock=Clock())
    job = rayjob(clusterSelector={"app": "x"})
    del job["spec"]["rayClusterSpec"]
    store.create(job)
    ctl.reconcile(NS, "job")
    st = store.get(RAY, "RayJob", "job", NS)["status"]
    assert st["jobDeploymentStatus"] == "ValidationFailed" and "ray.io/cluster" in st["message"]


def test_a_runtime_env_that_is_not_yaml_ends_validation_failed_with_an_event(store: Store) -> None:
    ctl = RayJobController(store, dashboard=FakeDashboard(), clock=Clock())
    store.create(rayjob(runtimeEnvYAML="pip: [unclosed"))
    ctl.reconcile(NS, "job")
    st = store.get(RAY, "RayJob", "job", NS)["status"]
    assert st["jobDeploymentStatus"] == "ValidationFailed"
    assert events(store, "InvalidRayJobSpec") and not store.list(RAY, "RayCluster").items


def _end(store: Store, pod: Obj, phase: str) -> None:
    pod = store.get("v1", "Pod", pod["metadata"]["name"], NS)
    pod["status"] = {"phase": phase}
    store.update_status(pod)


def _live(store: Store, selector: str) -> list[str]:
    return [
        p["metadata"]["name"] for p in pods(store, selector) if not p["metadata"].get("deletionTimestamp")
    ]


def test_a_worker_that_dies_is_replaced_by_a_new_pod(store: Store) -> None:
    ctl = RayClusterController(store)
    store.create(raycluster("rc", cluster_spec([worker_group("small", 2, 0, 2)])))
    ctl.reconcile(NS, "rc")
    run_all(store)
    dead = pods(store, "ray.io/group=small")[0]
    _end(store, dead, "Failed")
    ctl.reconcile(NS, "rc")
    live = _live(store, "ray.io/group=small")
    assert len(live) == 2 and dead["metadata"]["name"] not in live
    assert any(dead["metadata"]["name"] in m for m in events(store, "DeletedWorkerPod"))


def test_a_head_that_ends_is_replaced_by_a_new_head(store: Store) -> None:
    ctl = RayClusterController(store)
    store.create(raycluster("rc", cluster_spec([worker_group("small", 1, 0, 1)])))
    ctl.reconcile(NS, "rc")
    run_all(store)
    head = pods(store, "ray.io/node-type=head")[0]
    _end(store, head, "Failed")
    ctl.reconcile(NS, "rc")
    heads = _live(store, "ray.io/node-type=head")
    assert len(heads) == 1 and heads != [head["metadata"]["name"]]


def test_a_rayjob_whose_cluster_cannot_start_fails_with_the_clusters_reason(store: Store) -> None:
    # `ray` is not installed where the cluster's pods would run: the RayCluster fails at once,
    # and the RayJob ends Failed saying why instead of waiting in Initializing.
    mode = HostMode(host_processes=True, ray_bin="ray-not-installed-here", path="/nonexistent")
    ctl = RayJobController(store, mode, dashboard=FakeDashboard(), clock=Clock())
    cctl = RayClusterController(store, RayClusterOptions(mode=mode))
    store.create(rayjob())
    st = step(store, ctl, cctl, rounds=4)
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "RayClusterFailed")
    assert "ray-not-installed-here" in st["message"]
    assert events(store, "RayClusterFailed")
