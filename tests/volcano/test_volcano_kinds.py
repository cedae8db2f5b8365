"""Volcano's kinds as kubectl and the API see them: names, scopes, columns, defaults and the
fields a bad manifest gets named by. (The models are held against the upstream CRDs, and the
samples validated under Strict, by tests/api/test_crd_compat.py.)"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from volcanokit import registry, sample

from kubehpc.api.errors import Invalid
from kubehpc.api.registry import FieldValidation


@pytest.mark.parametrize(
    ("name", "group", "kind"),
    [
        ("vcjob", "batch.volcano.sh", "Job"),
        ("vj", "batch.volcano.sh", "Job"),
        ("jobs.batch.volcano.sh", "batch.volcano.sh", "Job"),
        ("pg", "scheduling.volcano.sh", "PodGroup"),
        ("q", "scheduling.volcano.sh", "Queue"),
        ("hn", "topology.volcano.sh", "HyperNode"),
        ("pgs", "scheduling.x-k8s.io", "PodGroup"),
        ("podgroups.scheduling.x-k8s.io", "scheduling.x-k8s.io", "PodGroup"),
        ("jobs", "batch", "Job"),  # the built-in Job keeps the plain name, as kubectl prefers it
    ],
)
def test_kubectl_names_resolve_as_upstream(name: str, group: str, kind: str) -> None:
    rt = registry().resolve(name)
    assert (rt.group, rt.kind) == (group, kind)


def validate(doc: dict[str, Any]) -> list[str]:
    _, spec = registry().for_kind(doc["apiVersion"], doc["kind"])
    try:
        spec.validate(copy.deepcopy(doc), FieldValidation.STRICT)
    except Invalid as e:
        return [f"{c.field}: {c.message}" for c in e.causes]
    return []


def test_defaults_fill_queue_max_retry_and_weight_as_the_crds_do() -> None:
    (job,) = sample("job.yaml")
    del job["spec"]["queue"], job["spec"]["maxRetry"]
    _, spec = registry().for_kind(job["apiVersion"], "Job")
    assert spec.default is not None
    spec.default(job)
    assert (job["spec"]["queue"], job["spec"]["maxRetry"]) == ("default", 3)
    (q,) = sample("docsnippet-queue-deserved.yaml")
    _, qspec = registry().for_kind(q["apiVersion"], "Queue")
    assert qspec.default is not None
    qspec.default(q)
    assert (q["spec"]["weight"], q["spec"]["dequeueStrategy"]) == (1, "traverse")


def test_a_bad_task_is_named_by_its_field() -> None:
    (job,) = sample("job.yaml")
    job["spec"]["tasks"][0]["replicas"] = -1
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 7
    problems = validate(job)
    assert "spec.tasks[0].replicas: Invalid value: -1: must be greater than or equal to 0" in problems
    assert any(p.startswith("spec.tasks[0].template.spec.containers[0].imagePullPolicy") for p in problems)


def test_a_policy_event_must_be_one_volcano_knows() -> None:
    (job,) = sample("job.yaml")
    job["spec"]["policies"][0]["event"] = "PodExploded"
    (problem,) = validate(job)
    assert problem.startswith('spec.policies[0].event: Unsupported value: "PodExploded"')


def test_a_queue_weight_must_be_positive() -> None:
    (q,) = sample("queue-capability.yaml")
    q["spec"]["weight"] = 0
    assert validate(q) == ["spec.weight: Invalid value: 0: must be greater than or equal to 1"]


def test_a_hypernode_member_selects_in_exactly_one_way() -> None:
    hn: dict[str, Any] = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "rack-1"},
        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {}}]},
    }
    assert validate(hn) == [
        "spec.members[0].selector: Either ExactMatch or RegexMatch or LabelMatch must be specified"
    ]
    hn["spec"]["members"][0]["selector"] = {"exactMatch": {"name": "n1"}, "regexMatch": {"pattern": "n.*"}}
    assert validate(hn) == [
        "spec.members[0].selector: Only one of ExactMatch, RegexMatch, or LabelMatch can be specified"
    ]
    hn["spec"]["members"][0]["selector"] = {"regexMatch": {"pattern": "gpu-[0-9]+"}}
    assert validate(hn) == []


def test_a_coscheduling_podgroup_carries_min_member_and_timeout() -> None:
    pg: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 10},
    }
    assert validate(pg) == []
    pg["spec"]["minMember"] = -1
    assert validate(pg) == ["spec.minMember: Invalid value: -1: must be greater than or equal to 0"]
