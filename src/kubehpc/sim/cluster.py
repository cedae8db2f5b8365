"""The pool a replay runs on: ``--procs N`` or the totals of a cluster config.

The simulator's pool is one bin per resource (the golden figures' convention: processors as a
single pool, no nodes). From a cluster config (the file ``kubehpc up --cluster`` reads) the pool
holds the sum over all nodes: cpu, memory, pods, and ``nvidia.com/gpu`` as whole GPUs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kubehpc.api.cluster_config import ClusterConfigError, load_cluster_config, resolve_nodes
from kubehpc.sim.traces.common import IntArray, Trace, TraceError

GPU = "nvidia.com/gpu"


def capacity_from_procs(trace: Trace, procs: int) -> IntArray:
    if procs <= 0:
        raise TraceError(f"--procs: must be a positive number, got {procs}")
    if len(trace.resources) != 1:
        raise TraceError(
            f"--procs gives one resource, but {trace.name} requests {', '.join(trace.resources)}: "
            "use --cluster FILE"
        )
    return np.array([procs * trace.whole_unit], dtype=np.int64)


def capacity_from_header(trace: Trace) -> IntArray:
    if trace.machine is None:
        # SWF users know the MaxProcs header; a GPU trace user needs to hear "GPUs" instead.
        missing = (
            "its machine size (no MaxProcs header)"
            if trace.resources == ("cpu",)
            else f"how much {', '.join(trace.resources)} the cluster has"
        )
        unit = "GPUs" if trace.resources == (GPU,) else "processors"
        raise TraceError(
            f"{trace.name}: the trace does not say {missing}: give --procs N ({unit}) or --cluster FILE"
        )
    return trace.machine


def capacity_from_cluster(trace: Trace, path: str | Path) -> IntArray:
    try:
        nodes = resolve_nodes(load_cluster_config(path))
    except ClusterConfigError as exc:
        raise TraceError(str(exc)) from None
    totals = {
        "cpu": sum(n.cpu_millis for n in nodes),
        "memory": sum(n.memory_bytes for n in nodes),
        "pods": sum(n.pods for n in nodes),
        GPU: sum(len(n.gpus) for n in nodes if not any(g.mig for g in n.gpus)),
    }
    out = []
    for r in trace.resources:
        amount = totals.get(r, 0)
        if r == "cpu" and trace.whole_unit == 1:
            amount //= 1000  # the trace counts whole processors
        out.append(amount)
    return np.array(out, dtype=np.int64)
