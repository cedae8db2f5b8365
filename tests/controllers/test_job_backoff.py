"""backoffLimit and the exponential back-off before failed pods are replaced."""

from __future__ import annotations

from jobkit import Cluster, job_manifest


def fail_current_pod(k: Cluster, name: str) -> None:
    (pod,) = k.active(name)
    k.fail(pod)
    k.sync(name)


def test_failed_pod_is_replaced_after_10s_then_20s_then_40s() -> None:
    k = Cluster()
    k.create(job_manifest("retry", backoffLimit=6))
    k.sync("retry")
    waits: list[float] = []
    for _ in range(3):
        (pod,) = k.active("retry")
        k.fail(pod)
        wait = k.sync("retry")
        assert wait is not None
        waits.append(wait)
        assert k.active("retry") == []
        k.clock.advance(wait - 1)
        k.sync("retry")
        assert k.active("retry") == []  # not a second early
        k.clock.advance(1)
        k.sync("retry")
    assert waits == [10.0, 20.0, 40.0]
    assert len(k.active("retry")) == 1


def test_job_fails_with_backoff_limit_exceeded_after_backoff_limit_plus_one_failures() -> None:
    k = Cluster()
    k.create(job_manifest("flaky", backoffLimit=2))
    k.sync("flaky")
    for _ in range(2):
        fail_current_pod(k, "flaky")
        k.clock.advance(400)
        k.sync("flaky")
    assert k.condition("flaky", "Failed") is None
    fail_current_pod(k, "flaky")
    status = k.status("flaky")
    assert status["failed"] == 3
    assert k.condition_types("flaky") == ["FailureTarget", "Failed"]
    for ctype in ("FailureTarget", "Failed"):
        cond = k.condition("flaky", ctype)
        assert cond is not None
        assert cond["reason"] == "BackoffLimitExceeded"
        assert cond["message"] == "Job has reached the specified backoff limit"
    assert "completionTime" not in status
    assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in k.events("flaky")


def test_backoff_limit_zero_fails_on_the_first_failure() -> None:
    k = Cluster()
    k.create(job_manifest("once", backoffLimit=0))
    k.sync("once")
    fail_current_pod(k, "once")
    assert k.condition_types("once") == ["FailureTarget", "Failed"]


def test_failing_job_deletes_its_other_running_pods_and_counts_them_failed() -> None:
    k = Cluster()
    k.create(job_manifest("par", parallelism=3, completions=3, backoffLimit=0, nodeName="node-1"))
    k.sync("par")
    first = k.active("par")[0]
    k.fail(first)
    k.sync("par")
    # The other two are being deleted; the Job is not Failed while they still terminate.
    assert k.condition_types("par") == ["FailureTarget"]
    assert k.status("par")["terminating"] == 2
    assert [reason for reason, _ in k.events("par")].count("SuccessfulDelete") == 2
    k.kill_terminating("par")
    k.sync("par")
    assert k.condition_types("par") == ["FailureTarget", "Failed"]
    assert k.status("par")["failed"] == 3
    assert "active" not in k.status("par")


def test_on_failure_restarts_count_against_the_backoff_limit() -> None:
    k = Cluster()
    k.create(job_manifest("restarts", backoffLimit=2, restartPolicy="OnFailure"))
    k.sync("restarts")
    (pod,) = k.active("restarts")
    k.set_status(
        pod,
        {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "main",
                    "image": "busybox",
                    "imageID": "kubehpc://busybox",
                    "ready": True,
                    "restartCount": 2,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        },
    )
    k.sync("restarts")
    target = k.condition("restarts", "FailureTarget")
    assert target is not None
    assert target["reason"] == "BackoffLimitExceeded"
