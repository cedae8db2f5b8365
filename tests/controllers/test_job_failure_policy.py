"""spec.podFailurePolicy: FailJob, FailIndex, Ignore and Count on exit codes and conditions."""

from __future__ import annotations

from typing import Any

from jobkit import Cluster, index_of, job_manifest

DISRUPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]


def with_policy(name: str, rules: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return job_manifest(name, podFailurePolicy={"rules": rules}, **spec)


FAIL_ON_42 = {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}
IGNORE_DISRUPTION = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}


def test_fail_job_rule_fails_the_job_at_once_with_reason_pod_failure_policy() -> None:
    k = Cluster()
    k.create(with_policy("pfp", [FAIL_ON_42], completions=3, parallelism=1, backoffLimit=6))
    k.sync("pfp")
    (pod,) = k.active("pfp")
    k.fail(pod, 42)
    k.sync("pfp")
    assert k.condition_types("pfp") == ["FailureTarget", "Failed"]
    failed = k.condition("pfp", "Failed")
    assert failed is not None
    assert failed["reason"] == "PodFailurePolicy"
    assert failed["message"] == (
        f"Container main for pod default/{pod['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 0"
    )
    assert k.status("pfp")["failed"] == 1


def test_exit_codes_outside_the_rule_count_against_the_backoff_limit() -> None:
    k = Cluster()
    k.create(with_policy("pfp", [FAIL_ON_42], backoffLimit=3))
    k.sync("pfp")
    k.fail(k.active("pfp")[0], 1)
    k.sync("pfp")
    assert k.condition("pfp", "FailureTarget") is None
    assert k.status("pfp")["failed"] == 1


def test_ignore_rule_neither_counts_the_failure_nor_fails_the_job() -> None:
    k = Cluster()
    k.create(with_policy("pfp", [IGNORE_DISRUPTION], backoffLimit=0))
    k.sync("pfp")
    (pod,) = k.active("pfp")
    k.fail(pod, 137, conditions=DISRUPTED)
    k.sync("pfp")
    k.clock.advance(10)
    k.sync("pfp")
    status = k.status("pfp")
    assert status.get("failed", 0) == 0
    assert k.condition("pfp", "FailureTarget") is None
    assert len(k.active("pfp")) == 1  # replaced


def test_count_rule_counts_like_no_rule_at_all() -> None:
    k = Cluster()
    rule = {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0]}}
    k.create(with_policy("pfp", [rule], backoffLimit=0))
    k.sync("pfp")
    k.fail(k.active("pfp")[0], 3)
    k.sync("pfp")
    failed = k.condition("pfp", "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"


def test_condition_rule_can_fail_the_job() -> None:
    k = Cluster()
    rule = {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}
    k.create(with_policy("pfp", [rule]))
    k.sync("pfp")
    (pod,) = k.active("pfp")
    k.fail(pod, 137, conditions=DISRUPTED)
    k.sync("pfp")
    failed = k.condition("pfp", "Failed")
    assert failed is not None
    pod_name = pod["metadata"]["name"]
    assert (
        failed["message"]
        == f"Pod default/{pod_name} has condition DisruptionTarget matching FailJob rule at index 0"
    )


def test_fail_index_rule_fails_only_that_index() -> None:
    k = Cluster()
    rule = {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [7]}}
    k.create(
        with_policy(
            "pfp", [rule], completionMode="Indexed", completions=3, parallelism=3, backoffLimitPerIndex=5
        )
    )
    k.sync("pfp")
    (victim,) = [p for p in k.active("pfp") if index_of(p) == 2]
    k.fail(victim, 7)
    k.sync("pfp")
    k.clock.advance(60)
    k.sync("pfp")
    assert k.status("pfp")["failedIndexes"] == "2"
    assert sorted(index_of(p) for p in k.active("pfp")) == [0, 1]


def test_with_a_failure_policy_a_terminating_pod_is_replaced_only_once_it_failed() -> None:
    k = Cluster()
    k.create(with_policy("pfp", [FAIL_ON_42], nodeName="node-1"))
    job = k.job("pfp")
    k.sync("pfp")
    assert job["spec"]["podReplacementPolicy"] == "Failed"
    (pod,) = k.active("pfp")
    k.store.delete("v1", "Pod", pod["metadata"]["name"], "default")  # graceful: still terminating
    k.sync("pfp")
    assert k.status("pfp")["terminating"] == 1
    assert k.active("pfp") == []
    k.kill_terminating("pfp")
    k.sync("pfp")
    k.clock.advance(10)
    k.sync("pfp")
    assert len(k.active("pfp")) == 1
    assert k.status("pfp")["failed"] == 1
