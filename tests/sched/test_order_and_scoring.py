"""Queue order, scoring strategies, and decisions that never depend on chance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_builders import node, placed, pod, pod_spec, snapshot

from kubehpc.sched import NodeInfo, NodeTable, PodSet, SchedulerConfig, Scoring, Snapshot, decide, placement
from kubehpc.sched.placement import Usage, charge, place
from kubehpc.sched.podspec import shape_of

BINPACK = SchedulerConfig(scoring=Scoring.MOST_ALLOCATED)


def test_higher_priority_pods_get_the_room_first() -> None:
    pods = [pod("low", priority=1, cpu="3", created=1), pod("high", priority=100, cpu="3", created=2)]
    decisions = decide(snapshot([node("n", cpu="4")], pods))
    assert placed(decisions) == {"high": "n"}
    assert [p.pod_set for p in decisions.pending] == ["low"]


def test_equal_priority_goes_by_creation_time() -> None:
    pods = [pod("later", cpu="3", created=20), pod("earlier", cpu="3", created=10)]
    assert placed(decide(snapshot([node("n", cpu="4")], pods))) == {"earlier": "n"}


def test_equal_priority_and_creation_time_goes_by_uid() -> None:
    pods = [pod("b", cpu="3"), pod("a", cpu="3")]
    assert placed(decide(snapshot([node("n", cpu="4")], pods))) == {"a": "n"}


def test_a_big_pod_that_does_not_fit_does_not_block_smaller_ones() -> None:
    pods = [pod("big", priority=10, cpu="8"), pod("small", cpu="1")]
    decisions = decide(snapshot([node("n", cpu="4")], pods))
    assert placed(decisions) == {"small": "n"}


def test_pending_pods_are_numbered_in_queue_order() -> None:
    pods = [pod("c", cpu="9", created=3), pod("a", cpu="9", created=1), pod("b", cpu="9", created=2)]
    pending = decide(snapshot([node("n", cpu="4")], pods)).pending
    assert [(p.pod_set, p.position) for p in pending] == [("a", 0), ("b", 1), ("c", 2)]


def test_least_allocated_spreads_pods_over_nodes() -> None:
    nodes = [node(f"n{i}", cpu="4") for i in range(3)]
    decisions = decide(snapshot(nodes, [pod("p", cpu="1", count=6)]))
    assert sorted(decisions.assignments()["p"].items()) == [("n0", 2), ("n1", 2), ("n2", 2)]


def test_least_allocated_prefers_the_emptier_node() -> None:
    nodes = [node("busy", cpu="8", used={"cpu": "6"}), node("idle", cpu="8")]
    assert placed(decide(snapshot(nodes, [pod("p", cpu="1")]))) == {"p": "idle"}


def test_most_allocated_fills_one_node_before_the_next() -> None:
    nodes = [node(f"n{i}", cpu="4") for i in range(3)]
    decisions = decide(snapshot(nodes, [pod("p", cpu="1", count=6)], BINPACK))
    assert decisions.assignments()["p"] == {"n0": 4, "n1": 2}


def test_most_allocated_prefers_the_fuller_node() -> None:
    nodes = [node("idle", cpu="8"), node("busy", cpu="8", used={"cpu": "6"})]
    assert placed(decide(snapshot(nodes, [pod("p", cpu="1")], BINPACK))) == {"p": "busy"}


def test_equal_scores_go_to_the_lowest_node_id() -> None:
    nodes = [node("z"), node("y"), node("x")]
    assert placed(decide(snapshot(nodes, [pod("p", cpu="1")]))) == {"p": "z"}


def test_the_same_snapshot_gives_the_same_decisions() -> None:
    nodes = [node(f"n{i}", cpu="4", labels={"rack": str(i % 2)}) for i in range(8)]
    pods = [pod(f"p{i}", priority=i % 3, cpu="500m", created=i % 4) for i in range(60)]
    first = decide(snapshot(nodes, pods))
    again = decide(snapshot(nodes, list(reversed(pods))))
    assert first == again


def test_a_pod_set_without_pod_names_gets_counts_per_node() -> None:
    shape = shape_of(pod_spec(cpu="1"))
    decisions = decide(snapshot([node("a", cpu="2"), node("b", cpu="2")], [PodSet("wl", shape, count=3)]))
    assert decisions.assignments() == {"wl": {"a": 2, "b": 1}}
    assert {b.pod for b in decisions.bindings} == {""}


def test_a_changed_table_decides_like_a_table_built_from_scratch() -> None:
    nodes = [node(f"n{i}", cpu="4", labels={"zone": "a"}) for i in range(4)]
    table = NodeTable.build(nodes)
    table.memo(("warm", 1), lambda: 1)
    changed = [
        node("n1", cpu="4", used={"cpu": "4"}, labels={"zone": "a"}),
        node("n9", cpu="16", labels={"zone": "b"}),
    ]
    pods = (pod("p", cpu="1", count=5, nodeSelector={"zone": "a"}),)
    incremental = table.with_changes(changed, removals=["n2"])
    scratch = NodeTable.build([nodes[0], changed[0], nodes[3], changed[1]])
    assert incremental.names == scratch.names
    assert decide(Snapshot(incremental, pods)) == decide(Snapshot(scratch, pods))


def test_a_usage_only_change_keeps_the_cached_masks() -> None:
    table = NodeTable.build([node("a", labels={"zone": "a"})])
    table.memo("mask", lambda: "cached")
    usage_only = table.with_changes([node("a", labels={"zone": "a"}, used={"cpu": "1"})])
    relabelled = table.with_changes([node("a", labels={"zone": "b"})])
    assert usage_only.memo("mask", lambda: "fresh") == "cached"
    assert relabelled.memo("mask", lambda: "fresh") == "fresh"


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[NodeInfo], int, int, int, SchedulerConfig]:
    count = draw(st.integers(1, 12))
    nodes = []
    for i in range(count):
        cpu = draw(st.integers(1, 16))
        nodes.append(
            NodeInfo(
                name=f"n{i}",
                allocatable={
                    "cpu": cpu * 1000,
                    "memory": draw(st.integers(1, 64)) << 30,
                    "pods": draw(st.integers(0, 12)),
                },
                used={"cpu": draw(st.integers(0, cpu * 1000))},
            )
        )
    scoring = draw(st.sampled_from(list(Scoring)))
    return (
        nodes,
        draw(st.integers(1, 4000)),
        draw(st.integers(0, 8)) << 28,
        draw(st.integers(1, 80)),
        SchedulerConfig(scoring),
    )


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_placing_a_run_together_lands_pods_where_one_by_one_placement_would(
    case: tuple[list[NodeInfo], int, int, int, SchedulerConfig],
) -> None:
    nodes, cpu, memory, k, config = case
    table = NodeTable.build(nodes)
    shape = shape_of(
        {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": str(memory)}}}]}
    )
    together = place(table, Usage.of(table), shape, k, config)
    usage = Usage.of(table)
    one_by_one = []
    for _ in range(k):
        got = place(table, usage, shape, 1, config)
        if len(got) == 0:
            break
        one_by_one.append(int(got[0]))
        charge(table, usage, shape, got)
    assert together.tolist() == one_by_one


def test_spreading_in_several_rounds_lands_pods_where_one_round_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nodes = [node(f"n{i}", cpu=str(2 + i % 5), used={"cpu": f"{i * 300 % 2000}m"}) for i in range(9)]
    snap = snapshot(nodes, [pod("p", cpu="250m", count=70)])
    one_round = decide(snap)
    monkeypatch.setattr(placement, "_SLOT_BUDGET", 5)  # force narrow windows of slots per round
    assert decide(snap) == one_round
