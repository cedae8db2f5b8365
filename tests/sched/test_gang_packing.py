"""Binpack keeps whole nodes free for big gangs; spread leaves free GPUs no pending shape can use."""

from __future__ import annotations

from gangkit import RACK, cluster, gang, gpu_shape, nodes_of, options, pod_set

from kubehpc.sched.gang import decide_gangs
from kubehpc.sched.packing import fragmentation
from kubehpc.sched.placement import Usage
from kubehpc.sched.topology import Packing


def test_binpack_fills_a_started_node_and_spread_takes_an_empty_one() -> None:
    table = cluster(1, 1, 3, used={"b0-r0-n1": 4})
    small = [gang("g", pod_set("w", 1, gpus=4))]
    binpack = decide_gangs(table, small, 0.0, options=options(table, Packing.BINPACK))
    spread = decide_gangs(table, small, 0.0, options=options(table, Packing.SPREAD))
    assert nodes_of(binpack.placed[0]) == ["b0-r0-n1"]
    assert nodes_of(spread.placed[0]) == ["b0-r0-n0"]


def test_binpack_keeps_a_whole_rack_free_for_a_big_gang_where_spread_does_not() -> None:
    table = cluster(1, 2, 2)
    small = [gang(f"s{i}", pod_set(f"s{i}", 1, gpus=4, level=RACK), created=i) for i in range(2)]
    big = gang("big", pod_set("b", 2, level=RACK), created=9)
    assert len(decide_gangs(table, [*small, big], 0.0, options=options(table, Packing.BINPACK)).placed) == 3
    spread = decide_gangs(table, [*small, big], 0.0, options=options(table, Packing.SPREAD))
    assert [p.gang for p in spread.pending] == ["big"]


def test_fragmentation_counts_free_gpus_no_pending_shape_can_use() -> None:
    table = cluster(1, 1, 4, used={"b0-r0-n0": 6, "b0-r0-n1": 4, "b0-r0-n2": 8})
    frag = fragmentation(table, Usage.of(table).used, [gpu_shape(4)])
    # Free: n0 2 (too few for 4), n1 4, n3 8 -> 2 of 14 free GPUs stranded.
    assert (frag.total, frag.free, frag.stranded) == (32, 14, 2)
    assert frag.fraction == 2 / 14
    assert fragmentation(table, Usage.of(table).used, [gpu_shape(2)]).stranded == 0
