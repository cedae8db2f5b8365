"""Pods a Job creates, and how a NonIndexed Job completes (on the in-memory Store)."""

from __future__ import annotations

import re

from jobkit import NS, Cluster, job_manifest, names


def test_pods_are_created_from_the_template_owned_by_the_job() -> None:
    k = Cluster()
    job = k.create(job_manifest("pi", completions=3, parallelism=2))
    pods = k.pods("pi")
    assert k.sync("pi") is None
    pods = k.pods("pi")
    assert len(pods) == 2
    for pod in pods:
        meta = pod["metadata"]
        assert re.fullmatch(r"pi-[a-z0-9]{5}", meta["name"])
        assert meta["generateName"] == "pi-"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "pi",
                "uid": job["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"]["batch.kubernetes.io/job-name"] == "pi"
        assert meta["labels"]["batch.kubernetes.io/controller-uid"] == job["metadata"]["uid"]
        assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert pod["spec"]["containers"][0]["command"] == ["true"]


def test_every_created_pod_is_recorded_as_a_successful_create_event() -> None:
    k = Cluster()
    k.create(job_manifest("pi", parallelism=2, completions=2))
    k.sync("pi")
    created = sorted(msg for reason, msg in k.events("pi") if reason == "SuccessfulCreate")
    assert created == sorted(f"Created pod: {n}" for n in names(k.pods("pi")))


def test_status_counts_active_and_ready_pods_and_records_the_start_time() -> None:
    k = Cluster()
    k.create(job_manifest("pi", parallelism=3, completions=3))
    k.sync("pi")
    a, b, _ = k.pods("pi")
    k.run(a, ready=True)
    k.run(b, ready=False)
    k.sync("pi")
    status = k.status("pi")
    assert (status["active"], status["ready"], status["terminating"]) == (3, 1, 0)
    assert status["startTime"] == k.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def test_job_completes_once_completions_pods_succeeded() -> None:
    k = Cluster()
    k.create(job_manifest("pi", completions=3, parallelism=2))
    k.sync("pi")
    for _ in range(3):
        k.succeed(k.active("pi")[0])
        k.sync("pi")
    status = k.status("pi")
    assert status["succeeded"] == 3
    assert "active" not in status and "failed" not in status
    assert k.condition_types("pi") == ["SuccessCriteriaMet", "Complete"]
    complete = k.condition("pi", "Complete")
    assert complete is not None
    assert complete["reason"] == "CompletionsReached"
    assert complete["message"] == "Reached expected number of succeeded pods"
    assert status["completionTime"]
    assert ("Completed", "Job completed") in k.events("pi")
    assert len(k.pods("pi")) == 3  # never more pods than completions needed


def test_finished_pods_lose_the_tracking_finalizer_once_counted() -> None:
    k = Cluster()
    k.create(job_manifest("pi"))
    k.sync("pi")
    k.succeed(k.pods("pi")[0])
    k.sync("pi")
    assert [p["metadata"].get("finalizers", []) for p in k.pods("pi")] == [[]]
    assert k.status("pi")["uncountedTerminatedPods"] == {}


def test_work_queue_job_completes_when_one_pod_succeeded_and_the_rest_finished() -> None:
    k = Cluster()
    k.create(job_manifest("wq", parallelism=3))  # completions unset
    k.sync("wq")
    first, second, third = k.pods("wq")
    k.succeed(first)
    k.sync("wq")
    assert len(k.pods("wq")) == 3  # after a success no new pods are started
    assert k.condition("wq", "Complete") is None  # the others still run
    k.succeed(second)
    k.succeed(third)
    k.sync("wq")
    assert k.condition_types("wq") == ["SuccessCriteriaMet", "Complete"]
    assert k.status("wq")["succeeded"] == 3


def test_lowering_parallelism_deletes_extra_pods_without_counting_them_failed() -> None:
    k = Cluster()
    k.create(job_manifest("scale", parallelism=3, completions=6))
    k.sync("scale")
    k.patch_spec("scale", parallelism=1)
    k.sync("scale")
    assert len(k.active("scale")) == 1
    assert k.status("scale").get("failed", 0) == 0
    deleted = [msg for reason, msg in k.events("scale") if reason == "SuccessfulDelete"]
    assert len(deleted) == 2


def test_a_pod_deleted_by_someone_else_counts_as_failed_and_is_replaced_after_back_off() -> None:
    k = Cluster()
    k.create(job_manifest("del", completions=1))
    k.sync("del")
    victim = k.pods("del")[0]
    k.store.delete("v1", "Pod", victim["metadata"]["name"], NS)
    assert k.sync("del") == 10.0
    assert k.status("del")["failed"] == 1
    assert k.active("del") == []
    k.clock.advance(10)
    k.sync("del")
    assert len(k.active("del")) == 1
    assert victim["metadata"]["name"] not in names(k.active("del"))


def test_reconciling_again_creates_no_extra_pods() -> None:
    k = Cluster()
    k.create(job_manifest("idem", parallelism=2, completions=2))
    k.sync("idem")
    k.sync("idem")
    k.new_controller().reconcile(NS, "idem")
    assert len(k.pods("idem")) == 2


def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    k = Cluster()
    k.create(job_manifest("other", managedBy="kueue.x-k8s.io/multikueue"))
    k.sync("other")
    assert k.pods("other") == []
    assert k.status("other") == {}


def test_status_is_serialized_as_kubernetes_does_with_zero_counters_omitted() -> None:
    k = Cluster()
    k.create(job_manifest("shape", suspend=True))
    k.sync("shape")
    status = k.status("shape")
    assert set(status) == {"conditions", "ready", "terminating", "uncountedTerminatedPods"}
    assert (status["ready"], status["terminating"], status["uncountedTerminatedPods"]) == (0, 0, {})
