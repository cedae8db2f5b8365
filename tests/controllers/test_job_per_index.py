"""backoffLimitPerIndex and maxFailedIndexes of Indexed Jobs."""

from __future__ import annotations

from typing import Any

from jobkit import Cluster, index_of, job_manifest

FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"


def per_index(name: str = "pi", **spec: Any) -> dict[str, Any]:
    return job_manifest(name, completionMode="Indexed", **spec)


def pod_of(k: Cluster, name: str, ix: int) -> dict[str, Any]:
    (pod,) = [p for p in k.active(name) if index_of(p) == ix]
    return pod


def test_replacement_pod_carries_the_failure_count_of_its_index() -> None:
    k = Cluster()
    k.create(per_index(completions=2, parallelism=2, backoffLimitPerIndex=2))
    k.sync("pi")
    assert {p["metadata"]["annotations"][FAILURE_COUNT] for p in k.pods("pi")} == {"0"}
    k.fail(pod_of(k, "pi", 0))
    assert k.sync("pi") == 10.0  # per-index back-off
    k.clock.advance(10)
    k.sync("pi")
    assert pod_of(k, "pi", 0)["metadata"]["annotations"][FAILURE_COUNT] == "1"


def test_an_index_fails_after_backoff_limit_per_index_retries_and_others_go_on() -> None:
    k = Cluster()
    k.create(per_index(completions=3, parallelism=3, backoffLimitPerIndex=1))
    k.sync("pi")
    for _ in range(2):
        k.fail(pod_of(k, "pi", 1))
        k.sync("pi")
        k.clock.advance(30)
        k.sync("pi")
    status = k.status("pi")
    assert status["failedIndexes"] == "1"
    assert sorted(index_of(p) for p in k.active("pi")) == [0, 2]
    assert k.condition("pi", "FailureTarget") is None


def test_job_with_failed_indexes_fails_with_reason_failed_indexes_once_all_indexes_finished() -> None:
    k = Cluster()
    k.create(per_index(completions=2, parallelism=2, backoffLimitPerIndex=0))
    k.sync("pi")
    k.fail(pod_of(k, "pi", 0))
    k.sync("pi")
    assert k.condition("pi", "Failed") is None
    k.succeed(pod_of(k, "pi", 1))
    k.sync("pi")
    status = k.status("pi")
    assert (status["failedIndexes"], status["completedIndexes"]) == ("0", "1")
    failed = k.condition("pi", "Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == ("FailedIndexes", "Job has failed indexes")


def test_job_fails_once_more_than_max_failed_indexes_failed() -> None:
    k = Cluster()
    k.create(per_index(completions=4, parallelism=4, backoffLimitPerIndex=0, maxFailedIndexes=1))
    k.sync("pi")
    k.fail(pod_of(k, "pi", 0))
    k.sync("pi")
    assert k.condition("pi", "FailureTarget") is None
    k.fail(pod_of(k, "pi", 2))
    k.sync("pi")
    failed = k.condition("pi", "Failed")
    assert failed is not None
    assert failed["reason"] == "MaxFailedIndexesExceeded"
    assert failed["message"] == "Job has exceeded the specified maximal number of failed indexes"
    assert k.status("pi")["failedIndexes"] == "0,2"
    assert k.active("pi") == []
