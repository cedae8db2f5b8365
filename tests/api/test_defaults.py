"""Defaults are filled in as the API server fills them, and only where missing."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api import defaults

UID = "3b0d8a1e-0000-4000-8000-000000000001"


def _job(**spec: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "uid": UID},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "c", "image": "perl:5.34"}], "restartPolicy": "Never"}
            }
        },
    }
    job["spec"].update(spec)
    defaults.default_job(job)
    return job


def test_job_without_parallelism_or_completions_gets_both_one() -> None:
    spec = _job()["spec"]
    assert (spec["parallelism"], spec["completions"]) == (1, 1)


def test_job_with_parallelism_only_keeps_completions_unset() -> None:
    spec = _job(parallelism=4)["spec"]
    assert spec["parallelism"] == 4
    assert "completions" not in spec


def test_job_with_completions_only_gets_parallelism_one() -> None:
    spec = _job(completions=5)["spec"]
    assert (spec["parallelism"], spec["completions"]) == (1, 5)


def test_job_backoff_limit_defaults_to_six() -> None:
    assert _job()["spec"]["backoffLimit"] == 6


def test_job_backoff_limit_is_max_int32_with_backoff_limit_per_index() -> None:
    assert (
        _job(backoffLimitPerIndex=1, completionMode="Indexed", completions=3)["spec"]["backoffLimit"]
        == 2**31 - 1
    )


def test_job_explicit_backoff_limit_is_kept() -> None:
    assert _job(backoffLimit=0)["spec"]["backoffLimit"] == 0


def test_job_scalar_defaults() -> None:
    spec = _job()["spec"]
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed",
        False,
        "TerminatingOrFailed",
    )


def test_job_with_pod_failure_policy_replaces_pods_only_when_failed() -> None:
    assert _job(podFailurePolicy={"rules": []})["spec"]["podReplacementPolicy"] == "Failed"


def test_job_selector_and_template_labels_are_generated_from_the_uid() -> None:
    job = _job()
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "job-name": "pi",
    }


def test_job_with_manual_selector_gets_no_generated_selector() -> None:
    job = _job(manualSelector=True, selector={"matchLabels": {"a": "b"}})
    assert job["spec"]["selector"] == {"matchLabels": {"a": "b"}}
    assert "labels" not in (job["spec"]["template"].get("metadata") or {})


def test_job_template_gets_pod_spec_defaults_but_keeps_its_restart_policy() -> None:
    pod_spec = _job()["spec"]["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Never"
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "enableServiceLinks" not in pod_spec  # a Pod-only default


def test_host_network_pods_expose_container_ports_as_host_ports() -> None:
    spec = _pod(hostNetwork=True)["spec"]
    assert spec["containers"][0]["ports"][0]["hostPort"] == 80


def test_job_labels_default_to_the_users_template_labels() -> None:
    job = _job(template={"metadata": {"labels": {"app": "pi"}}, "spec": {"containers": []}})
    assert job["metadata"]["labels"] == {"app": "pi"}


def test_job_without_any_labels_shows_the_generated_ones() -> None:
    assert _job()["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "job-name": "pi",
    }


def test_job_labels_of_its_own_are_kept() -> None:
    job: dict[str, Any] = {"metadata": {"name": "j", "uid": UID, "labels": {"team": "a"}}, "spec": {}}
    defaults.default_job(job)
    assert job["metadata"]["labels"] == {"team": "a"}


def _pod(**spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]},
    }
    pod["spec"].update(spec)
    defaults.default_pod(pod)
    return pod


def test_pod_spec_defaults() -> None:
    spec = _pod()["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True


def test_container_defaults() -> None:
    container = _pod()["spec"]["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"][0]["protocol"] == "TCP"


def test_explicit_restart_policy_is_kept() -> None:
    assert _pod(restartPolicy="OnFailure")["spec"]["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("localhost:5000/app", "Always"),
        ("localhost:5000/app:v2", "IfNotPresent"),
        ("app@sha256:abcd", "IfNotPresent"),
    ],
)
def test_image_pull_policy_depends_on_the_tag(image: str, policy: str) -> None:
    assert defaults.image_pull_policy(image) == policy


def test_pod_requests_default_to_limits() -> None:
    pod = _pod(
        containers=[{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]
    )
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert pod["status"]["qosClass"] == "Guaranteed"


def test_pod_status_starts_pending_with_its_qos_class() -> None:
    assert _pod()["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_burstable_when_requests_are_below_limits() -> None:
    resources = {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    pod = _pod(containers=[{"name": "c", "image": "x", "resources": resources}])
    assert pod["status"]["qosClass"] == "Burstable"


def test_service_defaults() -> None:
    svc: dict[str, Any] = {"spec": {"ports": [{"port": 80}]}}
    defaults.default_service(svc)
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["sessionAffinity"] == "None"
    assert svc["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}


def test_namespace_defaults() -> None:
    ns: dict[str, Any] = {"metadata": {"name": "team-a"}}
    defaults.default_namespace(ns)
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}


def test_pvc_secret_and_priority_class_defaults() -> None:
    pvc: dict[str, Any] = {"spec": {}}
    secret: dict[str, Any] = {}
    pc: dict[str, Any] = {"value": 1000}
    defaults.default_pvc(pvc)
    defaults.default_secret(secret)
    defaults.default_priority_class(pc)
    assert (pvc["spec"]["volumeMode"], pvc["status"]["phase"]) == ("Filesystem", "Pending")
    assert secret["type"] == "Opaque"
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"


def test_defaults_tolerate_malformed_input() -> None:
    pod: dict[str, Any] = {"spec": {"containers": "oops"}}
    defaults.default_pod(pod)
    assert pod["spec"]["containers"] == "oops"


def test_secret_string_data_is_merged_into_data_as_base64() -> None:
    secret: dict[str, Any] = {"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "hello"}}
    defaults.default_secret(secret)
    assert secret == {"type": "Opaque", "data": {"a": "eA==", "b": "aGVsbG8="}}
