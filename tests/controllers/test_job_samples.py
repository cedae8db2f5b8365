"""The sample Jobs of shared/samples/manifests/k8s-jobs, driven with simulated pod results
that follow what each sample's command does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobkit import Cluster, index_of, load_manifest

Obj = dict[str, Any]


def sample(shared_dir: Path, name: str) -> Obj:
    return load_manifest(shared_dir / "samples" / "manifests" / "k8s-jobs" / name)


def drive(k: Cluster, name: str, exit_code: Callable[[Obj], int], rounds: int = 50) -> None:
    """Run the Job to its end: every active pod finishes with ``exit_code(pod)``; between
    rounds the clock moves past any back-off."""
    k.sync(name)
    for _ in range(rounds):
        if k.condition(name, "Complete") or k.condition(name, "Failed"):
            return
        for pod in k.active(name):
            k.finish(pod, exit_code(pod))
        k.sync(name)
        k.clock.advance(400)
        k.sync(name)
    raise AssertionError(f"Job {name} did not finish: {k.status(name)}")


def test_pi_sample_completes(shared_dir: Path) -> None:
    k = Cluster()
    k.create(sample(shared_dir, "job-pi.yaml"))
    drive(k, "pi", lambda pod: 0)
    status = k.status("pi")
    assert (status["succeeded"], status.get("failed", 0)) == (1, 0)
    assert k.condition_types("pi") == ["SuccessCriteriaMet", "Complete"]


def test_indexed_job_sample_completes_every_index(shared_dir: Path) -> None:
    k = Cluster()
    k.create(sample(shared_dir, "indexed-job.yaml"))
    k.sync("indexed-job")
    assert len(k.active("indexed-job")) == 3  # parallelism
    first = k.active("indexed-job")[0]
    assert first["spec"]["initContainers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"
    drive(k, "indexed-job", lambda pod: 0)
    status = k.status("indexed-job")
    assert status["completedIndexes"] == "0-4"
    assert status["succeeded"] == 5
    assert k.condition("indexed-job", "Complete") is not None


def test_pod_failure_policy_sample_fails_the_job_on_exit_code_42(shared_dir: Path) -> None:
    k = Cluster()
    k.create(sample(shared_dir, "job-pod-failure-policy-example.yaml"))
    name = "job-pod-failure-policy-example"
    k.sync(name)
    assert len(k.active(name)) == 3
    k.finish(k.active(name)[0], 42)  # "echo Hello world! && sleep 5 && exit 42"
    k.sync(name)
    k.sync(name)
    assert k.condition_types(name) == ["FailureTarget", "Failed"]
    failed = k.condition(name, "Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert k.active(name) == []
    assert [reason for reason, _ in k.events(name)].count("SuccessfulCreate") == 3  # no retries
    assert k.status(name)["failed"] == 3  # the two pods it stopped count as failed too


def test_backoff_limit_per_index_sample_fails_the_even_indexes(shared_dir: Path) -> None:
    k = Cluster()
    k.create(sample(shared_dir, "job-backoff-limit-per-index-example.yaml"))
    name = "job-backoff-limit-per-index-example"
    drive(k, name, lambda pod: 1 if index_of(pod) % 2 == 0 else 0)
    status = k.status(name)
    # As the Kubernetes documentation shows for this example.
    assert status["failedIndexes"] == "0,2,4,6,8"
    assert status["completedIndexes"] == "1,3,5,7,9"
    assert (status["failed"], status["succeeded"]) == (10, 5)
    failed = k.condition(name, "Failed")
    assert failed is not None and failed["reason"] == "FailedIndexes"


def test_success_policy_sample_succeeds_when_index_2_succeeded(shared_dir: Path) -> None:
    k = Cluster()
    k.create(sample(shared_dir, "job-success-policy.yaml"))
    name = "job-success"
    k.sync(name)
    assert len(k.active(name)) == 10
    (two,) = [p for p in k.active(name) if index_of(p) == 2]
    k.finish(two, 0)
    k.sync(name)
    k.kill_terminating(name)
    k.sync(name)
    assert k.condition_types(name) == ["SuccessCriteriaMet", "Complete"]
    complete = k.condition(name, "Complete")
    assert complete is not None
    assert (complete["reason"], complete["message"]) == ("SuccessPolicy", "Matched rules at index 0")
    assert k.status(name)["completedIndexes"] == "2"
    assert k.active(name) == []
