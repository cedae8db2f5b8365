"""Hand-built clusters and workloads for the node-level replay tests (``sim/nodes.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import NodePolicy, SimOptions, SimResult, simulate
from kubehpc.sim.nodecluster import NodeCluster, load_node_cluster
from kubehpc.sim.nodes import Observer, simulate_nodes
from kubehpc.sim.traces.workload import parse_workload, workload_trace

RACK = "topology.kubehpc.io/rack"
BLOCK = "topology.kubehpc.io/block"


def cluster(tmp_path: Path, *pools: dict[str, Any]) -> NodeCluster:
    """A cluster config of ``pools`` (nodePools entries), written and read as `kubehpc up` does."""
    path = tmp_path / "cluster.yaml"
    config = {
        "apiVersion": "kubehpc.io/v1alpha1",
        "kind": "ClusterConfig",
        "metadata": {"name": "test"},
        "spec": {"nodePools": list(pools)},
    }
    path.write_text(yaml.safe_dump(config))
    return load_node_cluster(path)


def cpu_nodes(name: str, count: int, cpu: int, rack: str | None = None) -> dict[str, Any]:
    pool: dict[str, Any] = {"name": name, "count": count, "cpu": str(cpu), "memory": "64Gi"}
    if rack is not None:
        pool["topology"] = {"block": "b1", "rack": rack}
    return pool


def job(
    name: str, submit: float, runtime: float, *pod_sets: dict[str, Any], priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "submit": submit,
        "runtime": runtime,
        "priority": priority,
        "podSets": list(pod_sets),
    }


def pods(count: int, cpu: int, name: str = "main", **topology: str) -> dict[str, Any]:
    """``count`` pods of ``cpu`` whole cpus; ``requiredTopology=`` / ``preferredTopology=``."""
    return {"name": name, "count": count, "requests": {"cpu": str(cpu)}, **topology}


def workload(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubehpc.io/v1alpha1", "kind": "SimWorkload", "spec": {"jobs": list(jobs)}}


def replay(
    nodes: NodeCluster,
    jobs: list[dict[str, Any]],
    policy: Policy | NodePolicy = Policy.FCFS,
    observe: Observer | None = None,
) -> SimResult:
    trace = workload_trace(parse_workload(workload(*jobs), "w.yaml"), "w.yaml")
    return simulate_nodes(trace, nodes, SimOptions(policy=policy), observe)


def replay_pool(nodes: NodeCluster, jobs: list[dict[str, Any]]) -> SimResult:
    """The same jobs on the pool replay, with the cluster's totals as the pool."""
    trace = workload_trace(parse_workload(workload(*jobs), "w.yaml"), "w.yaml")
    return simulate(trace, nodes.capacity(trace.resources), SimOptions(policy=Policy.FCFS))


def starts(result: SimResult) -> dict[str, float]:
    """Job name -> start time (the replay keeps file order in its ids: job i has id i + 1)."""
    pods_ = result.trace.pods or ()
    return {p.name: float(s) for p, s in zip(pods_, result.start.tolist(), strict=True)}


def row(result: SimResult, name: str) -> int:
    pods_ = result.trace.pods or ()
    return next(i for i, p in enumerate(pods_) if p.name == name)
