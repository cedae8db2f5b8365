"""Node-level replay speed: a synthetic GPU gang workload on a generated 256-node cluster.

The cluster: 256 nodes x 8 GPUs (64 cpu, 1 TiB each) in 4 blocks x 8 racks (8 nodes a rack),
written as a cluster config and read as ``kubehpc sim --cluster`` reads it. The workload:
``--jobs`` gangs (default 2,000) of 1 to 64 GPUs (pods of up to 8 GPUs; from 8 GPUs up, whole
nodes), a third requiring one rack, a third preferring one, arriving at random (seeded) at about
90% of the cluster's GPUs, running an exponential time (mean 1 h).

Each policy of ``--placement nodes`` (``fcfs``, ``first-fit``) replays it through
``sched.gang.decide_gangs``; the pool replay (FCFS, ``sim/engine.py``) of the same trace on the
cluster's totals runs beside it as the baseline, in the same process.

Printed per run: jobs/s (replayed jobs over wall time of the whole replay), core seconds,
decisions, GPU utilisation (over the makespan, which the trace's last long jobs stretch), mean
wait. The last line: ``name=value`` pairs per run (``pool_``, ``fcfs_``, ``first_fit_``), and
the peak RSS. The headline figures are ``fcfs_jobs_per_s`` and ``fcfs_utilization``.

    python benchmarks/sim_nodes.py [--jobs 2000] [--seed 11]
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
from pathlib import Path
from typing import Any

import yaml

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import NodePolicy, SimOptions, SimResult, simulate
from kubehpc.sim.metrics import summary
from kubehpc.sim.nodecluster import load_node_cluster
from kubehpc.sim.nodes import simulate_nodes
from kubehpc.sim.traces.workload import parse_workload, workload_trace

BLOCKS, RACKS, NODES, GPUS = 4, 8, 8, 8
RACK = "topology.kubehpc.io/rack"
SIZES = (1, 2, 4, 8, 16, 32, 64)
WEIGHTS = (20, 12, 12, 18, 14, 14, 10)
MEAN_RUN_S = 3600.0
LOAD = 0.9


def cluster_config() -> dict[str, Any]:
    pools = [
        {
            "name": f"b{b}-r{r}",
            "count": NODES,
            "cpu": "64",
            "memory": "1Ti",
            "topology": {"block": f"b{b}", "rack": f"b{b}-r{r}"},
            "gpus": {"model": "H100-80GB", "count": GPUS},
        }
        for b in range(BLOCKS)
        for r in range(RACKS)
    ]
    return {
        "apiVersion": "kubehpc.io/v1alpha1",
        "kind": "ClusterConfig",
        "metadata": {"name": "bench256"},
        "spec": {"nodePools": pools},
    }


def workload(jobs: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    mean_gpus = sum(s * w for s, w in zip(SIZES, WEIGHTS, strict=True)) / sum(WEIGHTS)
    rate = LOAD * BLOCKS * RACKS * NODES * GPUS / (mean_gpus * MEAN_RUN_S)
    at = 0.0
    out = []
    for i in range(jobs):
        at += rng.expovariate(rate)
        gpus = rng.choices(SIZES, WEIGHTS)[0]
        per_pod = min(gpus, GPUS)
        pod_set: dict[str, Any] = {
            "name": "workers",
            "count": gpus // per_pod,
            "requests": {"cpu": str(per_pod * 8), "memory": f"{per_pod * 64}Gi", "nvidia.com/gpu": per_pod},
        }
        kind = rng.randrange(3)
        if kind == 1:
            pod_set["requiredTopology"] = RACK
        elif kind == 2:
            pod_set["preferredTopology"] = RACK
        run = max(1.0, round(rng.expovariate(1 / MEAN_RUN_S)))
        out.append({"name": f"j{i}", "submit": round(at), "runtime": run, "podSets": [pod_set]})
    return {"apiVersion": "kubehpc.io/v1alpha1", "kind": "SimWorkload", "spec": {"jobs": out}}


def line(label: str, r: SimResult) -> dict[str, Any]:
    s = summary(r)
    gpu = s["utilization_by_resource"]["nvidia.com/gpu"]
    print(
        f"{label}: {s['jobs']} jobs in {r.wall_seconds:.2f} s ({s['jobs'] / r.wall_seconds:,.0f} jobs/s), "
        f"core {r.policy_seconds:.2f} s over {r.decisions} decisions; GPU utilisation {gpu:.3f}; "
        f"mean wait {s['avg_wait_s']:,.0f} s; skipped {s['skipped']}"
    )
    return {"jobs_per_s": s["jobs"] / r.wall_seconds, "utilization": gpu, "avg_wait_s": s["avg_wait_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_text(yaml.safe_dump(cluster_config()))
        cluster = load_node_cluster(path)
    trace = workload_trace(parse_workload(workload(args.jobs, args.seed), "bench"))
    pool = line("pool fcfs (baseline)", simulate(trace, cluster.capacity(trace.resources), SimOptions()))
    figures = [
        f"pool_jobs_per_s={pool['jobs_per_s']:.0f}",
        f"pool_avg_wait_s={pool['avg_wait_s']:.0f}",
        f"pool_utilization={pool['utilization']:.3f}",
    ]
    for policy in (Policy.FCFS, NodePolicy.FIRST_FIT):
        got = line(f"nodes {policy}", simulate_nodes(trace, cluster, SimOptions(policy=policy)))
        name = str(policy).replace("-", "_")
        figures += [
            f"{name}_jobs_per_s={got['jobs_per_s']:.0f}",
            f"{name}_avg_wait_s={got['avg_wait_s']:.0f}",
            f"{name}_utilization={got['utilization']:.3f}",
        ]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(" ".join([*figures, f"peak_rss_mb={rss:.0f}"]))


if __name__ == "__main__":
    main()
