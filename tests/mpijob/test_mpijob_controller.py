"""The MPIJob controller's sync, step by step, on the in-process store (no processes run)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from mpijobkit import Harness, condition, manifest

from kubehpc.api.errors import Invalid


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def test_creates_the_operators_objects_and_the_created_condition(h: Harness) -> None:
    h.apply(manifest())
    job = h.sync()
    assert condition(job, "Created")["reason"] == "MPIJobCreated"  # type: ignore[index]
    assert [p["metadata"]["name"] for p in h.pods()] == ["pi-worker-0", "pi-worker-1"]
    assert h.get("v1", "Service", "pi")["spec"]["clusterIP"] == "None"
    cm = h.get("v1", "ConfigMap", "pi-config")
    assert (
        cm["data"]["hostfile"] == "pi-worker-0.pi.default.svc slots=2\npi-worker-1.pi.default.svc slots=2\n"
    )
    secret = h.get("v1", "Secret", "pi-ssh")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    load_pem_private_key(base64.b64decode(secret["data"]["ssh-privatekey"]), None)
    launcher = h.get("batch/v1", "Job", "pi-launcher")
    assert launcher["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"


def test_every_object_is_owned_by_the_job_for_garbage_collection(h: Harness) -> None:
    uid = h.apply(manifest())["metadata"]["uid"]
    h.sync()
    owned = [
        h.get("v1", "Service", "pi"),
        h.get("v1", "ConfigMap", "pi-config"),
        h.get("v1", "Secret", "pi-ssh"),
        h.get("batch/v1", "Job", "pi-launcher"),
        *h.pods(),
    ]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == uid for o in owned)


def test_discover_hosts_lists_only_running_workers(h: Harness) -> None:
    h.apply(manifest())
    h.sync()
    h.set_pod_phase("pi-worker-1", "Running")
    h.sync()
    assert h.get("v1", "ConfigMap", "pi-config")["data"]["discover_hosts.sh"] == (
        "#!/bin/sh\necho pi-worker-1.pi.default.svc\n"
    )


def test_wait_for_workers_ready_holds_the_launcher_back(h: Harness) -> None:
    h.apply(manifest(launcherCreationPolicy="WaitForWorkersReady"))
    h.sync()
    assert h.store.list("batch/v1", "Job").items == []
    h.set_pod_phase("pi-worker-0", "Running", ready=True)
    h.set_pod_phase("pi-worker-1", "Running", ready=True)
    h.sync()
    assert h.get("batch/v1", "Job", "pi-launcher")


def test_running_needs_the_launcher_and_every_worker_running(h: Harness) -> None:
    h.apply(manifest())
    h.sync()
    h.launcher_pod("Running")
    h.set_pod_phase("pi-worker-0", "Running")
    assert condition(h.sync(), "Running") is None
    h.set_pod_phase("pi-worker-1", "Running")
    job = h.sync()
    assert condition(job, "Running")["status"] == "True"  # type: ignore[index]
    assert job["status"]["replicaStatuses"]["Worker"]["active"] == 2


@pytest.mark.parametrize(
    ("policy", "left"),
    [("None", ["pi-worker-0", "pi-worker-1"]), ("Running", ["pi-worker-1"]), ("All", [])],
)
def test_clean_pod_policy_on_success(h: Harness, policy: str, left: list[str]) -> None:
    h.apply(manifest(runPolicy={"cleanPodPolicy": policy}))
    h.sync()
    h.set_pod_phase("pi-worker-0", "Running")
    h.set_pod_phase("pi-worker-1", "Succeeded")
    h.finish_launcher("Complete")
    job = h.sync()
    assert condition(job, "Succeeded")["reason"] == "MPIJobSucceeded"  # type: ignore[index]
    job = h.sync()  # the pass after completion cleans up
    assert (
        sorted(p["metadata"]["name"] for p in h.pods() if not p["metadata"].get("deletionTimestamp")) == left
    )


def test_launcher_failure_fails_the_job_with_its_reason(h: Harness) -> None:
    h.apply(manifest())
    h.sync()
    h.finish_launcher("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    job = h.sync()
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"].startswith("BackoffLimitExceeded")
    assert ("Warning", failed["reason"], failed["message"]) in h.events


def test_an_evicted_worker_fails_the_job(h: Harness) -> None:
    h.apply(manifest())
    h.sync()
    pod = h.get("v1", "Pod", "pi-worker-0")
    pod["status"] = {"phase": "Failed", "reason": "Evicted"}
    h.store.update_status(pod)
    assert condition(h.sync(), "Failed")["reason"] == "MPIJobEvicted"  # type: ignore[index]


def test_suspend_deletes_workers_and_suspends_the_launcher_then_resumes(h: Harness) -> None:
    h.apply(manifest())
    h.sync()
    job = h.get("kubeflow.org/v2beta1", "MPIJob", "pi")
    job["spec"]["runPolicy"] = {"suspend": True}
    h.store.update(job)
    job = h.sync()
    assert condition(job, "Suspended")["status"] == "True"  # type: ignore[index]
    assert h.get("batch/v1", "Job", "pi-launcher")["spec"]["suspend"] is True
    assert all(p["metadata"].get("deletionTimestamp") for p in h.pods()) or not h.pods()
    job["spec"]["runPolicy"]["suspend"] = False
    h.store.update(job)
    job = h.sync()
    assert condition(job, "Suspended")["reason"] == "MPIJobResumed"  # type: ignore[index]
    assert h.get("batch/v1", "Job", "pi-launcher")["spec"]["suspend"] is False


def test_run_policy_reaches_the_launcher_job(h: Harness) -> None:
    h.apply(
        manifest(runPolicy={"ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 600, "backoffLimit": 2})
    )
    h.sync()
    spec = h.get("batch/v1", "Job", "pi-launcher")["spec"]
    assert (spec["ttlSecondsAfterFinished"], spec["activeDeadlineSeconds"], spec["backoffLimit"]) == (
        60,
        600,
        2,
    )


def test_scaling_workers_down_deletes_the_extra_pods(h: Harness) -> None:
    h.apply(manifest(workers=3))
    h.sync()
    job = h.get("kubeflow.org/v2beta1", "MPIJob", "pi")
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    h.store.update(job)
    h.sync()
    live = [p["metadata"]["name"] for p in h.pods() if not p["metadata"].get("deletionTimestamp")]
    assert live == ["pi-worker-0"]


def test_missing_mpirun_on_the_host_is_a_failed_condition_and_an_event(tmp_path: Path) -> None:
    h = Harness(tmp_path, installed=())
    h.apply(manifest())
    job = h.sync()
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "LauncherProgramNotFound"
    assert "'mpirun' is not installed" in failed["message"]
    assert ("Warning", "LauncherProgramNotFound", failed["message"]) in h.events
    assert h.store.list("batch/v1", "Job").items == []


def test_a_launcher_with_two_replicas_is_reported_naming_the_field(h: Harness) -> None:
    # The CRD accepts it; the operator's validation reports it in an event and does nothing.
    bad = manifest()
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    h.apply(bad)
    h.sync()
    (type_, reason, message), *_ = h.events
    assert (type_, reason) == ("Warning", "ValidationError")
    assert "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1" in message
    assert h.pods() == []


def test_an_unknown_implementation_is_refused_by_the_schema_naming_the_field(h: Harness) -> None:
    with pytest.raises(Invalid, match="mpiImplementation"):
        h.apply(manifest(mpiImplementation="LAM"))


def test_v1_objects_are_served_and_stored_as_v2beta1(h: Harness) -> None:
    v1 = manifest()
    v1["apiVersion"] = "kubeflow.org/v1"
    del v1["spec"]["slotsPerWorker"]
    v1["spec"]["cleanPodPolicy"] = "All"
    h.apply(v1)
    stored = h.get("kubeflow.org/v2beta1", "MPIJob", "pi")
    assert stored["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    h.sync()
    assert len(h.pods()) == 2


def test_a_scheduling_policy_makes_the_pods_one_volcano_gang(tmp_path: Path) -> None:
    h = Harness(tmp_path, kinds=("kubehpc.api.kinds.volcano",))
    h.apply(manifest(runPolicy={"schedulingPolicy": {"queue": "research", "priorityClass": "high"}}))
    h.sync()
    group = h.store.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pi", "default")
    assert group["spec"]["minMember"] == 3  # two workers and the launcher
    assert (group["spec"]["queue"], group["spec"]["priorityClassName"]) == ("research", "high")
    launcher = h.get("batch/v1", "Job", "pi-launcher")["spec"]["template"]
    for template in (launcher, *h.pods()):
        assert template["spec"]["schedulerName"] == "volcano"
        assert template["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "pi"


def test_min_available_sets_the_gangs_minimum(tmp_path: Path) -> None:
    h = Harness(tmp_path, kinds=("kubehpc.api.kinds.volcano",))
    h.apply(manifest(runPolicy={"schedulingPolicy": {"minAvailable": 2}}))
    h.sync()
    assert h.store.get("scheduling.volcano.sh/v1beta1", "PodGroup", "pi", "default")["spec"]["minMember"] == 2
