"""The pure decision function: table tests without any store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubehpc.controllers.job import BackoffPolicy, plan_job, success_policy
from kubehpc.controllers.job import failure_policy as fp
from kubehpc.controllers.job.intervals import Intervals

Obj = dict[str, Any]
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
T = "2026-03-01T12:00:00Z"


def job(**spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}}
        }
        | spec,
        "status": {},
    }


def pod(name: str, phase: str = "Running", exit_code: int | None = None, **meta: Any) -> Obj:
    status: Obj = {"phase": phase}
    if exit_code is not None:
        status["containerStatuses"] = [
            {
                "name": "main",
                "state": {"terminated": {"exitCode": exit_code, "finishedAt": meta.pop("at", T)}},
            }
        ]
    return {
        "metadata": {
            "name": name,
            "uid": "uid-" + name,
            "namespace": "ns",
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "creationTimestamp": T,
            **meta,
        },
        "spec": {"containers": [{"name": "main", "image": "x"}]},
        "status": status,
    }


@pytest.mark.parametrize(
    ("spec", "running", "creates"),
    [
        ({}, 0, 1),  # neither set: one pod, one completion
        ({"parallelism": 3}, 0, 3),  # completions unset: a work queue of 3 workers
        ({"parallelism": 3, "completions": 2}, 0, 2),  # never more than the completions left
        ({"parallelism": 4, "completions": 10}, 1, 3),
        ({"parallelism": 0, "completions": 10}, 0, 0),
    ],
)
def test_pods_are_created_up_to_the_wanted_parallelism(spec: Obj, running: int, creates: int) -> None:
    pods = [pod(f"p{i}") for i in range(running)]
    assert len(plan_job(job(**spec), pods, NOW).create) == creates


def test_extra_active_pods_are_deleted_without_counting_them() -> None:
    plan = plan_job(job(parallelism=1, completions=5), [pod("a"), pod("b")], NOW)
    assert len(plan.delete) == 1
    assert plan.delete[0].remove_finalizer  # taken away, not a failure
    assert not plan.create


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 0), (1, 10), (2, 20), (3, 40), (6, 320), (7, 360), (30, 360)],
)
def test_replacement_back_off_doubles_from_10s_up_to_the_cap(failures: int, delay: float) -> None:
    assert BackoffPolicy(10, 360).delay(failures) == delay


def test_a_failed_pod_is_replaced_only_after_the_back_off() -> None:
    failed = pod("a", "Failed", exit_code=1, at=T)
    counted = {**failed, "metadata": {**failed["metadata"], "finalizers": []}}
    early = plan_job(
        job(completions=1, backoffLimit=6) | {"status": {"failed": 1}}, [counted], NOW + timedelta(seconds=4)
    )
    assert not early.create
    assert early.requeue_after == pytest.approx(6)
    late = plan_job(
        job(completions=1, backoffLimit=6) | {"status": {"failed": 1}}, [counted], NOW + timedelta(seconds=10)
    )
    assert len(late.create) == 1


def test_a_success_resets_the_back_off() -> None:
    failed = pod("a", "Failed", exit_code=1, at="2026-03-01T11:59:50Z")
    succeeded = pod("b", "Succeeded", exit_code=0, at=T)
    plan = plan_job(job(completions=3), [failed, succeeded], NOW)
    assert plan.requeue_after is None


RULES = (
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
    {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42, 43]}},
)


@pytest.mark.parametrize(
    ("exit_code", "conditions", "action"),
    [
        (42, [], "FailJob"),
        (43, [], None),
        (1, [], "Count"),
        (42, [{"type": "DisruptionTarget", "status": "True"}], "Ignore"),  # the first rule wins
        (42, [{"type": "DisruptionTarget", "status": "False"}], "FailJob"),
    ],
)
def test_pod_failure_policy_rules_match_in_order(
    exit_code: int, conditions: list[Obj], action: str | None
) -> None:
    failed = pod("a", "Failed", exit_code=exit_code)
    failed["status"]["conditions"] = conditions
    assert fp.match(RULES, failed).action == action


def test_exit_code_rules_ignore_other_containers_and_zero_exit_codes() -> None:
    rules = (
        {"action": "FailJob", "onExitCodes": {"containerName": "side", "operator": "NotIn", "values": [1]}},
    )
    failed = pod("a", "Failed", exit_code=7)  # the container is "main", not "side"
    assert fp.match(rules, failed).action is None
    zero = pod("b", "Failed", exit_code=0)
    assert (
        fp.match(({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}},), zero).action
        is None
    )


@pytest.mark.parametrize(
    ("rules", "succeeded", "met"),
    [
        ([{"succeededIndexes": "0,2-3", "succeededCount": 1}], [2], "Matched rules at index 0"),
        ([{"succeededIndexes": "0,2-3"}], [0, 2], None),
        ([{"succeededIndexes": "0,2-3"}], [0, 2, 3], "Matched rules at index 0"),
        ([{"succeededCount": 3}], [5, 6], None),
        ([{"succeededIndexes": "9"}, {"succeededCount": 2}], [5, 6], "Matched rules at index 1"),
    ],
)
def test_success_policy_rules(rules: list[Obj], succeeded: list[int], met: str | None) -> None:
    assert success_policy.match(tuple(rules), 10, Intervals.of(succeeded)) == met


def on_node(p: Obj, phase: str, ready: bool = False) -> Obj:
    p["spec"]["nodeName"] = "n1"
    p["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    return p


def test_pods_earliest_in_their_life_are_removed_first() -> None:
    unscheduled = pod("unscheduled", "Pending")
    candidates = [
        on_node(pod("ready"), "Running", ready=True),
        on_node(pod("running"), "Running"),
        on_node(pod("scheduled"), "Pending"),
        unscheduled,
    ]
    plan = plan_job(job(parallelism=1, completions=5), candidates, NOW)
    assert [d.name for d in plan.delete] == ["unscheduled", "scheduled", "running"]
