"""Topology-aware placement: count what fits bottom-up, assign top-down, tightest domain first."""

from __future__ import annotations

import numpy as np
import pytest
from gangkit import BLOCK, HOST, RACK, cluster, gang, gpu_node, nodes_of, options, pod_set

from kubehpc.sched import NodeTable
from kubehpc.sched.gang import decide_gangs
from kubehpc.sched.topology import (
    NVLINK_CLIQUE_LABEL,
    Mode,
    Packing,
    TopologyRequest,
    TopologyTree,
    assign,
    request_from_annotations,
    volcano_request,
)


def racks_of(placement: object) -> set[str]:
    return {n.rsplit("-", 1)[0] for n in nodes_of(placement)}


def blocks_of(placement: object) -> set[str]:
    return {n.split("-")[0] for n in nodes_of(placement)}


def test_required_rack_puts_every_pod_in_one_rack() -> None:
    table = cluster(2, 2, 4)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 4, level=RACK))], 0.0, options=options(table))
    assert len(racks_of(decisions.placed[0])) == 1
    assert decisions.placed[0].domains[0][0] == "w"


def test_required_rack_takes_the_tightest_rack_that_fits() -> None:
    # b0-r0 has 1 node free, b0-r1 3, b1-r0 4, b1-r1 2: three pods go to b0-r1.
    used = {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 8, "b0-r1-n0": 8, "b1-r1-n0": 8, "b1-r1-n1": 8}
    table = cluster(2, 2, 4, used=used)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 3, level=RACK))], 0.0, options=options(table))
    assert racks_of(decisions.placed[0]) == {"b0-r1"}


def test_a_required_block_that_no_block_holds_explains_in_terms_of_the_shape() -> None:
    used = {f"b1-r{r}-n{h}": 8 for r in range(4) for h in range(8) if r * 8 + h < 5}
    table = cluster(2, 4, 8, used=used)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 33, level=BLOCK))], 0.0, options=options(table))
    assert decisions.placed == ()
    assert decisions.pending[0].message == (
        "gang g: pod set w needs 33 x (8 nvidia.com/gpu) in one block; the best block (b0) has room for 32"
    )
    used = {f"b{b}-r{r}-n{h}": 8 for b in range(2) for r in range(4) for h in range(8) if r * 8 + h < 5}
    table = cluster(2, 4, 8, used=used)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 32, level=BLOCK))], 0.0, options=options(table))
    assert decisions.pending[0].message.endswith(
        "needs 32 x (8 nvidia.com/gpu) in one block; the best block (b0) has room for 27"
    )


def test_a_gang_uses_the_fewest_racks_of_its_block() -> None:
    table = cluster(1, 4, 4)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 6, level=BLOCK))], 0.0, options=options(table))
    assert len(racks_of(decisions.placed[0])) == 2


def test_the_last_rack_used_is_the_smallest_that_holds_the_rest() -> None:
    # Racks free: r0 4 nodes, r1 4, r2 1, r3 2. Five pods: r0 whole, then r2 (1 left), not r1.
    used = {"b0-r2-n0": 8, "b0-r2-n1": 8, "b0-r2-n2": 8, "b0-r3-n0": 8, "b0-r3-n1": 8}
    table = cluster(1, 4, 4, used=used)
    decisions = decide_gangs(table, [gang("g", pod_set("w", 5, level=BLOCK))], 0.0, options=options(table))
    assert racks_of(decisions.placed[0]) == {"b0-r0", "b0-r2"}


def test_preferred_rack_falls_back_to_one_block_when_no_rack_holds_the_pods() -> None:
    table = cluster(2, 2, 4)
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 6, level=RACK, mode=Mode.PREFERRED))], 0.0, options=options(table)
    )
    assert len(blocks_of(decisions.placed[0])) == 1
    assert len(racks_of(decisions.placed[0])) == 2


def test_required_rack_waits_where_preferred_spreads() -> None:
    table = cluster(2, 2, 4)
    required = decide_gangs(table, [gang("g", pod_set("w", 6, level=RACK))], 0.0, options=options(table))
    assert required.placed == ()
    assert (
        "needs 6 x (8 nvidia.com/gpu) in one rack; the best rack (b0-r0) has room for 4"
        in required.pending[0].message
    )


def test_preferred_spans_blocks_when_no_block_holds_the_pods() -> None:
    table = cluster(2, 2, 4)
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 12, level=BLOCK, mode=Mode.PREFERRED))], 0.0, options=options(table)
    )
    assert len(decisions.placed[0].bindings) == 12
    assert blocks_of(decisions.placed[0]) == {"b0", "b1"}


def test_unconstrained_places_anywhere_but_still_tight() -> None:
    table = cluster(2, 2, 4)
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 3, mode=Mode.UNCONSTRAINED))], 0.0, options=options(table)
    )
    assert len(racks_of(decisions.placed[0])) == 1


def test_a_required_level_no_node_carries_is_held_with_the_reason() -> None:
    table = cluster(1, 1, 2)
    opts = options(table, levels=("example.com/zone", RACK, HOST))
    decisions = decide_gangs(table, [gang("g", pod_set("w", 1, level="example.com/zone"))], 0.0, options=opts)
    assert decisions.pending[0].held
    assert "topology level example.com/zone is carried by no node" in decisions.pending[0].message


def test_a_level_outside_the_topology_is_held() -> None:
    table = cluster(1, 1, 2)
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 1, level="example.com/pod"))], 0.0, options=options(table)
    )
    assert decisions.pending[0].held


def test_an_nvlink_domain_is_a_level_like_any_other() -> None:
    # Two NVLink cliques of 4 nodes in one rack: a 4-pod gang needing one clique stays in one.
    nodes = [gpu_node(f"n{i}", **{RACK: "r0", NVLINK_CLIQUE_LABEL: f"fabric.{i // 4}"}) for i in range(8)]
    nodes[0] = gpu_node("n0", used=8, **{RACK: "r0", NVLINK_CLIQUE_LABEL: "fabric.0"})
    table = NodeTable.build(nodes)
    opts = options(table, levels=(RACK, NVLINK_CLIQUE_LABEL, HOST))
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 4, level=NVLINK_CLIQUE_LABEL))], 0.0, options=opts
    )
    assert nodes_of(decisions.placed[0]) == ["n4", "n5", "n6", "n7"]
    too_big = decide_gangs(table, [gang("g", pod_set("w", 5, level=NVLINK_CLIQUE_LABEL))], 0.0, options=opts)
    assert (
        "in one NVLink domain; the best NVLink domain (fabric.1) has room for 4" in too_big.pending[0].message
    )


def test_spread_takes_the_emptiest_domain_and_evens_out_its_nodes() -> None:
    used = {"b0-r0-n0": 4}
    table = cluster(1, 2, 2, used=used)
    tree = TopologyTree.from_labels(table, (BLOCK, RACK, HOST))
    cap = np.array([1, 2, 2, 2], dtype=np.int64)  # pods of 4 GPUs each node can take
    binpack = assign(tree, cap, 2, TopologyRequest(Mode.REQUIRED, RACK), Packing.BINPACK)
    spread = assign(tree, cap, 2, TopologyRequest(Mode.REQUIRED, RACK), Packing.SPREAD)
    assert binpack.counts.tolist() == [0, 2, 0, 0]  # type: ignore[union-attr]  # the fuller rack, one node
    assert spread.counts.tolist() == [0, 0, 1, 1]  # type: ignore[union-attr]


def test_trees_from_explicit_membership_place_like_labels() -> None:
    table = cluster(1, 2, 2)
    paths = {name: ("spine", "leaf-a" if "r0" in name else "leaf-b") for name in table.names}
    tree = TopologyTree.from_paths(table, ("tier-2", "tier-1"), paths)
    request = volcano_request("hard", 1, (1, 2))
    got = assign(tree, np.ones(4, dtype=np.int64), 2, request, Packing.BINPACK)
    assert got.domain == "leaf-a"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mode", "tier", "expected"),
    [
        ("hard", 1, TopologyRequest(Mode.REQUIRED, "tier-1")),
        ("hard", 2, TopologyRequest(Mode.REQUIRED, "tier-2")),
        ("soft", 1, TopologyRequest(Mode.PREFERRED, "tier-1")),
        ("hard", 9, TopologyRequest(Mode.REQUIRED, "tier-2")),
    ],
)
def test_volcano_network_topology_maps_to_a_level(mode: str, tier: int, expected: TopologyRequest) -> None:
    assert volcano_request(mode, tier, (1, 2)) == expected


def test_a_tier_below_every_hypernode_means_one_node() -> None:
    assert volcano_request("hard", 1, (2, 3)) == TopologyRequest(Mode.REQUIRED, "node")


def test_volcano_network_topology_rejects_a_bad_mode() -> None:
    with pytest.raises(ValueError, match="hard or soft"):
        volcano_request("strict", 1, (1,))


def test_kueue_annotations_name_the_request() -> None:
    assert request_from_annotations({"kueue.x-k8s.io/podset-required-topology": RACK}) == TopologyRequest(
        Mode.REQUIRED, RACK
    )
    assert request_from_annotations({"kueue.x-k8s.io/podset-preferred-topology": BLOCK}) == TopologyRequest(
        Mode.PREFERRED, BLOCK
    )
    assert request_from_annotations(
        {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    ) == TopologyRequest(Mode.UNCONSTRAINED)
    assert request_from_annotations({}) is None


def test_a_gang_allowed_to_start_short_still_explains_its_domain() -> None:
    # minMember 3 of 4 pods in one rack; the best rack (two free nodes) holds only 2 of them.
    used = {f"b0-r{r}-n{h}": 8 for r in range(2) for h in range(2)}
    table = cluster(1, 2, 4, used=used)
    decisions = decide_gangs(
        table, [gang("g", pod_set("w", 4, level=RACK), min_member=3)], 0.0, options=options(table)
    )
    assert decisions.placed == ()
    assert decisions.pending[0].message == (
        "gang g: 2 of the 3 pods the gang needs together fit; "
        "pod set w needs 4 x (8 nvidia.com/gpu) in one rack; the best rack (b0-r0) has room for 2"
    )
