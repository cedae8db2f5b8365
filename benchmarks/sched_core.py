"""Throughput of the pure scheduling core: 5,000 nodes, 10,000 and 50,000 pending pods.

The shape of kube-scheduler's scheduler_perf "SchedulingBasic" at 5,000 nodes (and of
shared/research/kube-scheduler-bench.md): nodes of 64 cpu, 256Gi, 110 pods, 8 nvidia.com/gpu,
spread over 4 zones; single-pod workloads of cpu 100m + memory 128Mi (``cpu`` shape), plus
``nvidia.com/gpu: 1`` (``gpu`` shape). Timed: building the snapshot's pod list is not; building
the node table, ``decide`` and the decisions are. Also timed, ``distinct``: every pod a shape
of its own (varying cpu), so no two consecutive pods can be placed together — the worst case
for the core's run batching — and ``incremental``: a second cycle after 1% of the nodes changed
(``NodeTable.with_changes``).

Prints one line per case and, last, ``name=value`` pairs (pods_per_s is the slowest of the
10,000 / 50,000 cpu and gpu drains).

    python benchmarks/sched_core.py [--nodes 5000] [--pods 10000,50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time

import kubehpc
from kubehpc.api.devices import Device, NodeDevices, allocate_pod
from kubehpc.sched import DeviceState, NodeInfo, NodeTable, PodSet, SchedulerConfig, Scoring, Snapshot, decide
from kubehpc.sched.podspec import shape_of

GI = 1024**3


def make_nodes(count: int) -> list[NodeInfo]:
    return [
        NodeInfo(
            name=f"fake-node-{i:05d}",
            allocatable={
                "cpu": 64_000,
                "memory": 256 * GI,
                "pods": 110,
                "nvidia.com/gpu": 8,
                "ephemeral-storage": 1 << 40,
            },
            labels={
                "kubernetes.io/hostname": f"fake-node-{i:05d}",
                "topology.kubernetes.io/zone": f"zone-{i % 4}",
            },
        )
        for i in range(count)
    ]


def pod_spec(cpu: str, gpu: bool) -> dict[str, object]:
    resources: dict[str, object] = {"requests": {"cpu": cpu, "memory": "128Mi"}}
    if gpu:
        resources["limits"] = {"nvidia.com/gpu": 1}
    return {"containers": [{"name": "pause", "image": "pause:3.2", "resources": resources}]}


def make_pods(count: int, gpu: bool, distinct: bool) -> tuple[PodSet, ...]:
    shared = shape_of(pod_spec("100m", gpu))
    pods = []
    for i in range(count):
        shape = shape_of(pod_spec(f"{100 + i % 1000}m", gpu)) if distinct else shared
        pods.append(
            PodSet(uid=f"pod-{i:06d}", shape=shape, created=float(i), pod_ids=(f"default/pod-{i:06d}",))
        )
    return tuple(pods)


def drain(nodes: list[NodeInfo], pods: tuple[PodSet, ...], config: SchedulerConfig) -> tuple[float, int, int]:
    """Seconds to build the table and decide; pods bound; pods left pending."""
    gc.collect()
    start = time.perf_counter()
    table = NodeTable.build(nodes)
    decisions = decide(Snapshot(table, pods, config))
    elapsed = time.perf_counter() - start
    return elapsed, len(decisions.bindings), sum(p.count for p in decisions.pending)


def best_of(
    repeat: int, nodes: list[NodeInfo], pods: tuple[PodSet, ...], config: SchedulerConfig
) -> tuple[float, int, int]:
    return min((drain(nodes, pods, config) for _ in range(repeat)), key=lambda r: r[0])


def peak_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 if sys.platform != "darwin" else rss / 1024 / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", default="10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    counts = [int(c) for c in args.pods.split(",")]
    nodes = make_nodes(args.nodes)
    figures: dict[str, float] = {}
    drains: list[float] = []
    for scoring in (Scoring.LEAST_ALLOCATED, Scoring.MOST_ALLOCATED):
        config = SchedulerConfig(scoring=scoring)
        tag = "spread" if scoring is Scoring.LEAST_ALLOCATED else "binpack"
        for count in counts:
            for gpu in (False, True):
                pods = make_pods(count, gpu, distinct=False)
                seconds, bound, pending = best_of(args.repeat, nodes, pods, config)
                rate = count / seconds
                shape = "gpu" if gpu else "cpu"
                print(
                    f"{tag:8s} {shape} {count:6d} pods on {args.nodes} nodes: {seconds * 1000:8.1f} ms "
                    f"{rate:10.0f} pods/s (bound {bound}, pending {pending})"
                )
                if scoring is Scoring.LEAST_ALLOCATED:
                    drains.append(rate)
                    figures[f"{shape}{count // 1000}k_pods_per_s"] = round(rate)
    distinct = make_pods(counts[0], False, distinct=True)
    seconds, bound, pending = best_of(1, nodes, distinct, SchedulerConfig())
    figures["distinct_pods_per_s"] = round(counts[0] / seconds)
    print(f"spread   distinct {counts[0]} pods, every pod its own shape: {counts[0] / seconds:10.0f} pods/s")
    # GPU pods with device choice: every pod also gets its GPU picked (the node agent's pure
    # allocator, called per pod), 8 GPUs per node in two NVLink groups.
    inventories = {
        n.name: NodeDevices(
            n.name,
            tuple(Device(f"GPU-{n.name}-{i}", "nvidia.com/gpu", i, i // 4, i // 4, 81920) for i in range(8)),
        )
        for n in nodes
    }
    gpu_pods = make_pods(counts[0], True, distinct=False)
    gc.collect()
    start = time.perf_counter()
    state = DeviceState(allocate=allocate_pod, inventories=inventories)
    decide(Snapshot(NodeTable.build(nodes), gpu_pods, SchedulerConfig(), state))
    seconds = time.perf_counter() - start
    figures["gpu_devices_pods_per_s"] = round(counts[0] / seconds)
    print(f"spread   gpu {counts[0]} pods with device choice: {counts[0] / seconds:10.0f} pods/s")
    # Incremental: the next cycle after 1% of the nodes changed usage.
    table = NodeTable.build(nodes)
    pods = make_pods(counts[0], False, distinct=False)
    changed = [
        NodeInfo(n.name, n.allocatable, {"cpu": 32_000, "pods": 50}, n.labels)
        for n in nodes[:: max(1, len(nodes) // 50)]
    ]
    decide(Snapshot(table, pods))
    start = time.perf_counter()
    table = table.with_changes(changed)
    decide(Snapshot(table, pods))
    incremental = time.perf_counter() - start
    figures["incremental_cycle_ms"] = round(incremental * 1000, 1)
    print(f"incremental cycle ({len(changed)} nodes changed, {counts[0]} pods): {incremental * 1000:.1f} ms")
    figures["pods_per_s"] = round(min(drains))
    figures["peak_rss_mib"] = round(peak_rss_mib(), 1)
    figures["native"] = "yes" if kubehpc.NATIVE_OFF_REASON is None else "no"  # compiled (mypyc)?
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
