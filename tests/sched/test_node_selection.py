"""NodeAffinity: nodeSelector and required node affinity pick the nodes a pod may use."""

from __future__ import annotations

from typing import Any

import pytest
from sched_builders import node, placed, pod, snapshot

from kubehpc.sched import decide

NODES = [
    node("a100-1", labels={"gpu": "a100", "rack": "1", "gpus": "8"}),
    node("h100-2", labels={"gpu": "h100", "rack": "2", "gpus": "4"}),
    node("plain-3", labels={"rack": "3"}),
]


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def eligible(**spec: Any) -> set[str]:
    """Every node a pod with ``spec`` may land on: place one such pod per node, spread."""
    decisions = decide(snapshot(NODES, [pod("p", count=len(NODES), **spec)]))
    return {b.node for b in decisions.bindings}


def test_node_selector_requires_every_label() -> None:
    assert eligible(nodeSelector={"gpu": "a100", "rack": "1"}) == {"a100-1"}
    assert eligible(nodeSelector={"gpu": "a100", "rack": "2"}) == set()


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        (expr("gpu", "In", "a100", "h100"), {"a100-1", "h100-2"}),
        (expr("gpu", "NotIn", "a100"), {"h100-2", "plain-3"}),  # a node without the label matches NotIn
        (expr("gpu", "Exists"), {"a100-1", "h100-2"}),
        (expr("gpu", "DoesNotExist"), {"plain-3"}),
        (expr("gpus", "Gt", "4"), {"a100-1"}),
        (expr("gpus", "Lt", "8"), {"h100-2"}),
        (expr("rack", "Gt", "not-a-number"), set()),
    ],
    ids=["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gt-bad-value"],
)
def test_match_expression_operators(term: dict[str, Any], expected: set[str]) -> None:
    assert eligible(affinity=required(term)) == expected


def test_match_fields_selects_nodes_by_name() -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["plain-3"]}]}
    assert eligible(affinity=required(term)) == {"plain-3"}


def test_node_selector_terms_are_ored() -> None:
    assert eligible(affinity=required(expr("gpu", "In", "h100"), expr("rack", "In", "3"))) == {
        "h100-2",
        "plain-3",
    }


def test_expressions_within_a_term_are_anded() -> None:
    term = {
        "matchExpressions": [
            {"key": "gpu", "operator": "Exists"},
            {"key": "rack", "operator": "In", "values": ["2", "3"]},
        ]
    }
    assert eligible(affinity=required(term)) == {"h100-2"}


def test_an_empty_term_selects_no_node() -> None:
    assert eligible(affinity=required({})) == set()


def test_node_selector_and_affinity_must_both_match() -> None:
    assert eligible(nodeSelector={"rack": "1"}, affinity=required(expr("gpu", "In", "h100"))) == set()


def test_preferred_affinity_picks_among_fitting_nodes() -> None:
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "preference": expr("gpu", "In", "h100")},
            ]
        }
    }
    assert placed(decide(snapshot(NODES, [pod("p", affinity=preferred)]))) == {"p": "h100-2"}


def test_a_pod_the_filters_leave_one_node_lands_there_while_it_has_room() -> None:
    nodes = [node(n, cpu="2", labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2", "n3")]
    pods = [
        pod(f"p{i}", created=float(i), cpu="1", nodeSelector={"kubernetes.io/hostname": "n2"})
        for i in range(3)
    ]
    assert placed(decide(snapshot(nodes, pods))) == {"p0": "n2", "p1": "n2"}  # p2: n2 is full


def test_a_pod_the_filters_leave_no_node_is_not_placed() -> None:
    nodes = [node(n, labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2")]
    assert placed(decide(snapshot(nodes, [pod("p", nodeSelector={"kubernetes.io/hostname": "n9"})]))) == {}
