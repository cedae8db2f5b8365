"""The admission hooks: Kueue's job webhook and the Priority plugin."""

from __future__ import annotations

import pytest
from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.api.errors import Forbidden, Invalid


def test_a_job_created_unsuspended_with_a_queue_label_is_stored_suspended() -> None:
    k = KueueCluster()
    job = queued_job("a")
    job["spec"]["suspend"] = False
    assert k.create(job)[0]["spec"]["suspend"] is True


def test_an_update_may_suspend_and_resume_a_job_freely() -> None:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 1}}), local_queue("user-queue", "cq"))
    k.submit(queued_job("a"))
    job = k.job("a")
    assert job["spec"]["suspend"] is False  # the webhook runs on CREATE only, as Kueue's


def test_the_queue_of_a_running_job_cannot_change() -> None:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 1}}), local_queue("user-queue", "cq"))
    k.submit(queued_job("a"))
    job = k.job("a")
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "elsewhere"
    with pytest.raises(Invalid) as err:
        k.store.update(job)
    assert err.value.causes[0].field == "metadata.labels[kueue.x-k8s.io/queue-name]"


def test_the_queue_of_a_waiting_job_may_change_and_its_workload_follows() -> None:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 1}}), local_queue("user-queue", "cq"))
    k.submit(queued_job("a", queue="wrong-queue"))
    k.store.patch(
        "batch/v1",
        "Job",
        "a",
        {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}},
        namespace="default",
    )
    k.settle()
    assert k.workload("a")["spec"]["queueName"] == "user-queue"
    assert k.job("a")["spec"]["suspend"] is False


def test_a_pod_gets_the_priority_of_its_priority_class() -> None:
    k = KueueCluster()
    k.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "hi"},
            "value": 7,
        }
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"priorityClassName": "hi", "containers": [{"name": "c", "image": "busybox"}]},
    }
    assert k.create(pod)[0]["spec"]["priority"] == 7


def test_a_pod_naming_a_missing_priority_class_is_refused() -> None:
    k = KueueCluster()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"priorityClassName": "nope", "containers": [{"name": "c", "image": "busybox"}]},
    }
    with pytest.raises(Forbidden, match="no PriorityClass with name nope was found"):
        k.create(pod)
