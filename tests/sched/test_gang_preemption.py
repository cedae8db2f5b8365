"""A high-priority gang evicts whole lower-priority gangs, as few as it needs, never a fragment."""

from __future__ import annotations

from gangkit import BLOCK, RACK, cluster, gang, gpu_shape, options, pod_set

from kubehpc.sched.gang import decide_gangs
from kubehpc.sched.gang_preemption import RunningGang, RunningPod, find_victims, plan_preemptions
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.placement import Usage


def running(
    uid: str, nodes: list[str], priority: int = 0, gpus: int = 8, created: float = 0.0
) -> RunningGang:
    shape = gpu_shape(gpus)
    return RunningGang(
        uid, priority, tuple(RunningPod(f"{uid}-{i}", n, shape) for i, n in enumerate(nodes)), created
    )


def occupied(blocks: int, racks: int, hosts: int, gangs: list[RunningGang]) -> NodeTable:
    used: dict[str, int] = {}
    for g in gangs:
        for p in g.pods:
            used[p.node] = used.get(p.node, 0) + p.shape.request("nvidia.com/gpu")
    return cluster(blocks, racks, hosts, used=used)


def test_the_victims_are_whole_gangs_and_no_more_than_needed() -> None:
    # Block b0 holds gangs a (two racks) and b; block b1 holds c. Three nodes of one block are
    # needed: evicting a (the youngest) frees two nodes of b0 beside the one already free.
    work = [
        running("a", ["b0-r0-n0", "b0-r1-n0"], created=5.0),
        running("b", ["b0-r0-n1"], created=1.0),
        running("c", ["b1-r0-n0", "b1-r1-n0"], created=1.0),
    ]
    table = occupied(2, 2, 2, work)
    wanted = gang("hi", pod_set("w", 3, level=BLOCK), priority=10)
    got = find_victims(table, Usage.of(table), wanted, work, options=options(table))
    assert got is not None
    assert got.victims == ("a",)
    assert set(got.pods) == {"a-0", "a-1"}  # both racks' pods: no fragment of a survives


def test_a_gang_needing_more_than_one_victim_evicts_each_whole() -> None:
    work = [
        running("a", ["b0-r0-n0", "b0-r1-n0"], created=5.0),
        running("b", ["b0-r0-n1"], created=1.0),
        running("c", ["b1-r0-n0", "b1-r1-n0"], created=1.0),
    ]
    table = occupied(2, 2, 2, work)
    wanted = gang("hi", pod_set("w", 4, level=BLOCK), priority=10)
    got = find_victims(table, Usage.of(table), wanted, work, options=options(table))
    assert got is not None
    assert got.victims == ("c",)  # one gang (c) frees a whole block; a + b would be two
    assert set(got.pods) == {"c-0", "c-1"}


def test_no_gang_of_equal_or_higher_priority_is_evicted() -> None:
    work = [running("same", ["b0-r0-n0", "b0-r0-n1"], priority=10), running("low", ["b0-r1-n0"])]
    table = occupied(1, 2, 2, work)
    wanted = gang("hi", pod_set("w", 4, level=BLOCK), priority=10)
    assert find_victims(table, Usage.of(table), wanted, work, options=options(table)) is None


def test_a_gang_that_would_not_fit_even_on_empty_nodes_evicts_nothing() -> None:
    work = [running("low", ["b0-r0-n0"])]
    table = occupied(1, 1, 2, work)
    wanted = gang("hi", pod_set("w", 3), priority=10)
    assert find_victims(table, Usage.of(table), wanted, work, options=options(table)) is None


def test_the_lowest_priority_gangs_go_first() -> None:
    work = [running("mid", ["b0-r0-n0"], priority=5), running("low", ["b0-r0-n1"], priority=1)]
    table = occupied(1, 1, 2, work)
    got = find_victims(table, Usage.of(table), gang("hi", pod_set("w", 1), priority=10), work)
    assert got is not None and got.victims == ("low",)


def test_a_victim_that_turns_out_unneeded_is_spared() -> None:
    # n0 holds x (4 GPUs, lowest) beside z (4 GPUs, too important); n1 holds y. Taking x first
    # frees only half a node; y must go; then x is given back.
    x = running("x", ["b0-r0-n0"], priority=1, gpus=4)
    z = running("z", ["b0-r0-n0"], priority=20, gpus=4)
    y = running("y", ["b0-r0-n1"], priority=2)
    work = [x, y, z]
    table = occupied(1, 1, 2, work)
    got = find_victims(table, Usage.of(table), gang("hi", pod_set("w", 1), priority=10), work)
    assert got is not None and got.victims == ("y",)


def test_a_decision_plans_preemptions_for_waiting_gangs_without_sharing_victims() -> None:
    work = [running("a", ["b0-r0-n0", "b0-r0-n1"]), running("b", ["b0-r1-n0", "b0-r1-n1"])]
    table = occupied(1, 2, 2, work)
    first = gang("first", pod_set("f", 2, level=RACK), priority=10, created=1.0)
    second = gang("second", pod_set("s", 2, level=RACK), priority=10, created=2.0)
    decisions = decide_gangs(table, [first, second], 0.0, options=options(table))
    planned = plan_preemptions(table, decisions, [first, second], work, options=options(table))
    assert [(p.preemptor, len(p.victims)) for p in planned] == [("first", 1), ("second", 1)]
    assert {v for p in planned for v in p.victims} == {"a", "b"}
