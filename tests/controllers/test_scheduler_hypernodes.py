"""Volcano HyperNodes as a topology tree, and networkTopology placing a PodGroup's pods in one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_scheduler import make_node, make_pod, node_of, run_until
from test_scheduler_gangs import message, volcano_member

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.gangs import SERVED_SCHEDULERS
from kubehpc.controllers.scheduling.hypernodes import hypernode_tree
from kubehpc.sched import NodeInfo, NodeTable
from kubehpc.store.store import Store

Obj = dict[str, Any]


def hypernode(name: str, tier: int, *members: Obj, tier_name: str | None = None) -> Obj:
    spec: Obj = {"tier": tier, "members": list(members)}
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def nodes(*names: str) -> Obj:
    return {"type": "Node", "selector": {"regexMatch": {"pattern": "^(" + "|".join(names) + ")$"}}}


def exact(kind: str, name: str) -> Obj:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def test_each_node_gets_its_hypernode_per_tier() -> None:
    table = NodeTable.build(
        [
            NodeInfo(n, {"cpu": 1000}, labels={"zone": "a" if n < "n2" else "b"})
            for n in ("n0", "n1", "n2", "n3", "n4")
        ]
    )
    hns = [
        hypernode("leaf-a", 1, {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"zone": "a"}}}}),
        hypernode("leaf-b", 1, nodes("n2", "n3")),
        hypernode("spine", 2, exact("HyperNode", "leaf-a"), exact("HyperNode", "leaf-b"), tier_name="spine"),
    ]
    got = hypernode_tree(table, hns)
    assert got is not None
    assert got.tiers == (2, 1)
    assert got.tier_names == {"spine": 2}
    assert got.tree.levels == ("tier-2", "tier-1", "node")
    leaves = got.tree.domain[1].tolist()
    assert [got.tree.names[1][d] if d >= 0 else None for d in leaves] == [
        "leaf-a",
        "leaf-a",
        "leaf-b",
        "leaf-b",
        None,
    ]


def test_regex_members_match_anywhere_in_the_name_as_go_does() -> None:
    table = NodeTable.build([NodeInfo("gpu-node-7", {"cpu": 1000})])
    got = hypernode_tree(
        table, [hypernode("s", 1, {"type": "Node", "selector": {"regexMatch": {"pattern": "node"}}})]
    )
    assert got is not None and got.tree.names[0] == ["s"]


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


@pytest.fixture
def scheduler(store: Store) -> Iterator[Scheduler]:
    sched = Scheduler(
        store, SchedulerOptions(scheduler_names=SERVED_SCHEDULERS, record_events=False), clock=Clock()
    )
    sched.start(run_loop=False)
    yield sched
    sched.stop()


def network_group(store: Store, name: str, min_member: int, network: Obj) -> None:
    store.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "networkTopology": network},
            # What the Volcano queue loop (not running here) writes once the queue lets it in.
            "status": {"phase": "Inqueue"},
        }
    )


def test_a_hard_network_topology_keeps_the_gang_in_one_tier1_hypernode(
    store: Store, scheduler: Scheduler
) -> None:
    for n in ("n0", "n1", "n2", "n3"):
        make_node(store, n)
    make_pod(store, "busy", cpu="3", nodeName="n0")
    store.create(hypernode("s0", 1, nodes("n0", "n1")))
    store.create(hypernode("s1", 1, nodes("n2", "n3")))
    store.create(hypernode("top", 2, exact("HyperNode", "s0"), exact("HyperNode", "s1")))
    network_group(store, "job", 2, {"mode": "hard", "highestTierAllowed": 1})
    volcano_member(store, "m0", "job")
    volcano_member(store, "m1", "job")
    run_until(scheduler, lambda: bool(node_of(store, "m0") and node_of(store, "m1")))
    # Binpack alone would take n1 (beside the busy node) and n2; one HyperNode means s1.
    assert sorted(str(node_of(store, p)) for p in ("m0", "m1")) == ["n2", "n3"]


def test_a_hard_network_topology_without_hypernodes_is_held(store: Store, scheduler: Scheduler) -> None:
    make_node(store, "n0", cpu="8")
    network_group(store, "job", 1, {"mode": "hard", "highestTierAllowed": 1})
    volcano_member(store, "m0", "job")
    run_until(scheduler, lambda: bool(message(store, "m0")))
    assert node_of(store, "m0") is None
    assert "networkTopology is hard but no HyperNode exists" in message(store, "m0")


def test_a_soft_network_topology_spans_hypernodes_where_hard_waits(
    store: Store, scheduler: Scheduler
) -> None:
    for n in ("n0", "n1", "n2", "n3"):
        make_node(store, n)
    make_pod(store, "busy0", cpu="3", nodeName="n0")
    make_pod(store, "busy2", cpu="3", nodeName="n2")
    store.create(hypernode("s0", 1, nodes("n0", "n1")))
    store.create(hypernode("s1", 1, nodes("n2", "n3")))
    store.create(hypernode("top", 2, exact("HyperNode", "s0"), exact("HyperNode", "s1")))
    # Each tier-1 HyperNode has one free node: two 3-cpu pods fit in none of them.
    network_group(store, "hard", 2, {"mode": "hard", "highestTierAllowed": 1})
    volcano_member(store, "h0", "hard")
    volcano_member(store, "h1", "hard")
    # The loop may first see h0 alone (and say it waits for a second pod): wait for the verdict
    # on the whole gang.
    run_until(scheduler, lambda: "in one tier-1" in message(store, "h0"))
    assert node_of(store, "h0") is None and node_of(store, "h1") is None
    assert message(store, "h0").endswith(
        "needs 2 x (3 cpu) in one tier-1; the best tier-1 (s0) has room for 1"
    )
    for name in ("h0", "h1"):
        store.delete("v1", "Pod", name, "default")
    network_group(store, "soft", 2, {"mode": "soft", "highestTierAllowed": 1})
    volcano_member(store, "s0", "soft")
    volcano_member(store, "s1", "soft")
    run_until(scheduler, lambda: bool(node_of(store, "s0") and node_of(store, "s1")))
    assert sorted(str(node_of(store, p)) for p in ("s0", "s1")) == ["n1", "n3"]
