"""Queue policies of the node-level replay: strict FCFS, and first-fit as the live gang scheduler.

One node of 8 cpu. "big" holds 6 cpu from 0 to 100; "blocked" (4 cpu, at 1) cannot start until
then; "small" (2 cpu, at 2) fits in the 2 cpu left at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simnodekit import cluster, cpu_nodes, job, pods, replay, replay_pool, row, starts, workload

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import NodePolicy, SimOptions
from kubehpc.sim.nodecluster import NodeCluster
from kubehpc.sim.nodes import simulate_nodes
from kubehpc.sim.traces import TraceError
from kubehpc.sim.traces.workload import parse_workload, workload_trace

JOBS = [
    job("big", 0, 100, pods(1, 6)),
    job("blocked", 1, 50, pods(1, 4)),
    job("small", 2, 10, pods(1, 2)),
]


@pytest.fixture(scope="module")
def one_node(tmp_path_factory: pytest.TempPathFactory) -> NodeCluster:
    return cluster(tmp_path_factory.mktemp("one"), cpu_nodes("n", 1, 8))


def test_fcfs_a_blocked_head_keeps_a_smaller_later_job_waiting(tmp_path: Path) -> None:
    result = replay(cluster(tmp_path, cpu_nodes("n", 1, 8)), JOBS, Policy.FCFS)
    # At 100 "big" ends; "blocked" (4) and then "small" (2) start together.
    assert starts(result) == {"big": 0.0, "blocked": 100.0, "small": 100.0}
    assert not result.backfilled.any()


def test_first_fit_lets_a_later_job_start_past_a_blocked_one(tmp_path: Path) -> None:
    result = replay(cluster(tmp_path, cpu_nodes("n", 1, 8)), JOBS, NodePolicy.FIRST_FIT)
    assert starts(result) == {"big": 0.0, "blocked": 100.0, "small": 2.0}
    assert result.backfilled[row(result, "small")] and not result.backfilled[row(result, "blocked")]


def test_priority_orders_the_queue_before_submit_time(tmp_path: Path) -> None:
    # Both wait for "big"; at 100 only one 5-cpu job fits: the later, higher-priority one.
    jobs = [
        job("big", 0, 100, pods(1, 6)),
        job("early", 1, 50, pods(1, 5)),
        job("urgent", 2, 50, pods(1, 5), priority=10),
    ]
    result = replay(cluster(tmp_path, cpu_nodes("n", 1, 8)), jobs, Policy.FCFS)
    assert starts(result) == {"big": 0.0, "urgent": 100.0, "early": 150.0}


@pytest.mark.parametrize("policy", [Policy.EASY, Policy.CONSERVATIVE])
def test_backfill_policies_are_refused_on_nodes(tmp_path: Path, policy: Policy) -> None:
    trace = workload_trace(parse_workload(workload(*JOBS)))
    with pytest.raises(TraceError, match="not modelled with --placement nodes"):
        simulate_nodes(trace, cluster(tmp_path, cpu_nodes("n", 1, 8)), SimOptions(policy=policy))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(1, 40), st.integers(0, 1)),
        min_size=1,
        max_size=10,
    )
)
def test_fcfs_on_one_node_with_one_pod_jobs_is_the_pools_fcfs(
    one_node: NodeCluster, draws: list[tuple[int, int, int, int]]
) -> None:
    # One node is the pool: a one-pod job fits the node exactly when it fits the total.
    jobs = [job(f"j{i}", s, r, pods(1, cpu), priority=p) for i, (s, cpu, r, p) in enumerate(draws)]
    assert starts(replay(one_node, jobs, Policy.FCFS)) == starts(replay_pool(one_node, jobs))
