"""Properties of gang placement on random small clusters, checked against the plain facts:
a gang is placed with at least its minimum or not at all, no node is given more than it has,
a required domain holds every pod of its set, nothing taken back is left charged, and the pods
a started gang left behind wait."""

from __future__ import annotations

import numpy as np
from gangkit import BLOCK, RACK, cluster, gang, options, pod_set
from hypothesis import given, settings
from hypothesis import strategies as st

from kubehpc.sched.gang import Gang, decide_gangs
from kubehpc.sched.topology import Mode, Packing

GPU = "nvidia.com/gpu"


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, int], list[Gang], Packing]:
    used = {
        f"b{b}-r{r}-n{h}": draw(st.sampled_from((0, 0, 2, 4, 8)))
        for b in range(2)
        for r in range(2)
        for h in range(3)
    }
    gangs = []
    for i in range(draw(st.integers(1, 6))):
        sets = []
        for j in range(draw(st.integers(1, 2))):
            level = draw(st.sampled_from((None, RACK, BLOCK)))
            mode = draw(st.sampled_from((Mode.REQUIRED, Mode.PREFERRED))) if level else Mode.REQUIRED
            count = draw(st.integers(1, 8))
            min_count = draw(st.one_of(st.none(), st.integers(1, count)))
            sets.append(
                pod_set(
                    f"g{i}s{j}",
                    count,
                    gpus=draw(st.sampled_from((2, 4, 8))),
                    level=level,
                    mode=mode,
                    min_count=min_count,
                )
            )
        size = sum(s.count for s in sets)
        min_member = draw(st.one_of(st.none(), st.integers(1, size)))
        gangs.append(
            gang(f"g{i}", *sets, priority=draw(st.integers(0, 2)), created=float(i), min_member=min_member)
        )
    return used, gangs, draw(st.sampled_from((Packing.BINPACK, Packing.SPREAD)))


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_gangs_are_placed_whole_within_capacity_and_domain(
    scenario: tuple[dict[str, int], list[Gang], Packing],
) -> None:
    used, gangs, packing = scenario
    table = cluster(2, 2, 3, used=used)
    decisions = decide_gangs(table, gangs, 0.0, options=options(table, packing))
    col = table.resource_index[GPU]
    given_out = {name: 0 for name in table.names}
    by_uid = {g.uid: g for g in gangs}
    for placement in decisions.placed:
        g = by_uid[placement.gang]
        assert len(placement.bindings) >= g.needed
        for ps in g.pod_sets:
            mine = [b for b in placement.bindings if b.pod_set == f"{g.uid}/{ps.name}"]
            assert g.minimum(ps) <= len(mine) <= ps.count
            if ps.topology is not None and ps.topology.mode is Mode.REQUIRED and mine:
                depth = 1 if ps.topology.level == BLOCK else 2
                assert len({"-".join(b.node.split("-")[:depth]) for b in mine}) == 1
            for b in mine:
                given_out[b.node] += ps.shape.request(GPU)
    placed = {p.gang for p in decisions.placed}
    waiting = {p.gang for p in decisions.pending if p.gang not in placed}
    assert placed | waiting == set(by_uid)
    # A started gang's pods without a node wait, preempting nothing; no pod is forgotten.
    for p in decisions.pending:
        if p.gang in placed:
            g = by_uid[p.gang]
            bound = {b.pod for pl in decisions.placed if pl.gang == p.gang for b in pl.bindings}
            assert p.held and set(p.pods) == {x for ps in g.pod_sets for x in ps.pod_ids} - bound
    for name, extra in given_out.items():
        i = table.index[name]
        assert table.used[i, col] + extra <= table.allocatable[i, col]
        # What the decision charged is exactly what it bound: rolled-back gangs left nothing.
        assert decisions.usage.used[i, col] == table.used[i, col] + extra
    assert np.array_equal(
        decisions.usage.used[:, table.resource_index["pods"]] - table.used[:, table.resource_index["pods"]],
        np.array([sum(1 for p in decisions.placed for b in p.bindings if b.node == n) for n in table.names]),
    )
