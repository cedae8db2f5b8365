"""All or nothing: on random small workloads, no job ever runs with part of its pods.

At every event instant of the node-level replay, every running job has every pod of every pod
set on a node (in one rack when it requires one), node usage is exactly the sum of what the
running jobs hold (so a finish gives back exactly its pods), and never exceeds allocatable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simnodekit import RACK, cluster, cpu_nodes, job

from kubehpc.sched.backfill import Policy
from kubehpc.sched.placement import Usage
from kubehpc.sim.engine import NodePolicy, SimOptions
from kubehpc.sim.nodecluster import NodeCluster
from kubehpc.sim.nodes import Held, simulate_nodes
from kubehpc.sim.traces.workload import parse_workload, workload_trace


@pytest.fixture(scope="module")
def racks(tmp_path_factory: pytest.TempPathFactory) -> NodeCluster:
    # Two racks of two 8-cpu nodes, and a third rack with one 16-cpu node.
    tmp: Path = tmp_path_factory.mktemp("racks")
    return cluster(
        tmp,
        cpu_nodes("a", 2, 8, rack="r1"),
        cpu_nodes("b", 2, 8, rack="r2"),
        cpu_nodes("c", 1, 16, rack="r3"),
    )


@st.composite
def pod_set(draw: st.DrawFn, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "count": draw(st.integers(1, 4)),
        "requests": {"cpu": str(draw(st.integers(1, 8))), "memory": f"{draw(st.integers(1, 16))}Gi"},
    }
    topology = draw(st.sampled_from(["", "requiredTopology", "preferredTopology"]))
    if topology:
        out[topology] = draw(st.sampled_from([RACK, "kubernetes.io/hostname"]))
    return out


@st.composite
def jobs(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        sets = [draw(pod_set(f"set{k}")) for k in range(draw(st.integers(1, 2)))]
        submit = draw(st.integers(0, 40))
        out.append(job(f"j{i}", submit, draw(st.integers(1, 60)), *sets, priority=draw(st.integers(0, 2))))
    return out


@settings(max_examples=60, deadline=None)
@given(jobs(), st.sampled_from([Policy.FCFS, NodePolicy.FIRST_FIT]))
def test_every_running_job_holds_all_its_pods_and_nodes_are_never_overcommitted(
    racks: NodeCluster, workload_jobs: list[dict[str, Any]], policy: Policy | NodePolicy
) -> None:
    table = racks.table
    seen: list[tuple[float, np.ndarray, dict[int, list[tuple[Any, np.ndarray]]]]] = []

    def observe(now: float, _table: Any, usage: Usage, held: Held) -> None:
        seen.append((now, usage.used.copy(), {j: [(s, ids.copy()) for s, ids in v] for j, v in held.items()}))

    data = {"apiVersion": "kubehpc.io/v1alpha1", "kind": "SimWorkload", "spec": {"jobs": workload_jobs}}
    trace = workload_trace(parse_workload(data))
    result = simulate_nodes(trace, racks, SimOptions(policy=policy), observe)
    pods = result.trace.pods or ()
    assert not np.isnan(result.start).any()  # every job that fits the empty cluster ran
    for now, used, held in seen:
        assert (used <= table.allocatable).all()
        expected = np.zeros_like(used)
        for j, charges in held.items():
            assert result.start[j] <= now < result.start[j] + result.run[j]
            for spec, (shape, ids) in zip(pods[j].pod_sets, charges, strict=True):
                assert len(ids) == spec.count
                if spec.required_topology == RACK:
                    assert len({table.labels[i][RACK] for i in ids.tolist()}) == 1
                elif spec.required_topology is not None:
                    assert len(set(ids.tolist())) == 1
                for resource, amount in shape.requests:
                    np.add.at(expected[:, table.resource_index[resource]], ids, amount)
        running = {j for j in range(len(pods)) if result.start[j] <= now < result.start[j] + result.run[j]}
        assert set(held) == running
        assert (used == expected).all()
