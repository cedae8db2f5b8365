"""TaintToleration and NodeUnschedulable: which tainted or cordoned nodes a pod may use."""

from __future__ import annotations

from typing import Any

import pytest
from sched_builders import node, placed, pod, snapshot

from kubehpc.sched import Taint, decide

GPU_TAINT = Taint("gpu", "true", "NoSchedule")


def lands_on_tainted(taint: Taint, tolerations: list[dict[str, Any]]) -> bool:
    """Whether a pod with ``tolerations`` may use the only node, which carries ``taint``."""
    decisions = decide(snapshot([node("n", taints=(taint,))], [pod("p", tolerations=tolerations)]))
    return bool(decisions.bindings)


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_an_untolerated_hard_taint_keeps_pods_off(effect: str) -> None:
    assert not lands_on_tainted(Taint("gpu", "true", effect), [])


def test_prefer_no_schedule_does_not_keep_pods_off() -> None:
    assert lands_on_tainted(Taint("gpu", "true", "PreferNoSchedule"), [])


def test_prefer_no_schedule_steers_pods_to_untainted_nodes() -> None:
    nodes = [node("soft", taints=(Taint("spot", "", "PreferNoSchedule"),)), node("clean")]
    assert placed(decide(snapshot(nodes, [pod("p")]))) == {"p": "clean"}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "gpu", "value": "true"}, True),  # operator defaults to Equal, empty effect = any
        ({"key": "gpu", "operator": "Equal", "value": "false"}, False),
        ({"key": "gpu", "operator": "Exists"}, True),
        ({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists"}, True),  # empty key with Exists tolerates everything
        ({"key": "other", "operator": "Exists"}, False),
    ],
    ids=[
        "equal",
        "equal-default-operator",
        "equal-other-value",
        "exists",
        "exists-other-effect",
        "empty-key",
        "other-key",
    ],
)
def test_toleration_matching(toleration: dict[str, Any], tolerated: bool) -> None:
    assert lands_on_tainted(GPU_TAINT, [toleration]) is tolerated


def test_every_hard_taint_must_be_tolerated() -> None:
    taints = (GPU_TAINT, Taint("dedicated", "ml", "NoExecute"))
    tolerations = [{"key": "gpu", "operator": "Exists"}]
    decisions = decide(snapshot([node("n", taints=taints)], [pod("p", tolerations=tolerations)]))
    assert decisions.bindings == ()


def test_a_cordoned_node_takes_no_new_pods() -> None:
    nodes = [node("cordoned", unschedulable=True), node("open", cpu="1")]
    assert placed(decide(snapshot(nodes, [pod("p")]))) == {"p": "open"}


def test_tolerating_the_unschedulable_taint_allows_a_cordoned_node() -> None:
    tolerations = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    decisions = decide(snapshot([node("cordoned", unschedulable=True)], [pod("p", tolerations=tolerations)]))
    assert placed(decisions) == {"p": "cordoned"}
