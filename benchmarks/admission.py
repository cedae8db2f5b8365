"""Throughput of the pure admission core (Kueue semantics), and its memory at scale.

Core part (no control plane):

* ``admit``: 15,000 workloads over 100 ClusterQueues in 10 cohorts (the shape of Kueue's
  large-scale performance test, with every workload pending at once). In each cohort, half the
  ClusterQueues have more nominal quota than they need and lend it; the other half borrow
  (borrowingLimit) — so most admissions go through the cohort. Workloads are 1, 2 or 4 cpu
  with 1-4Gi memory, at priorities 50 / 100 / 200, one pod set each. Timed: ``decide`` alone
  (building the snapshot from the stored objects is reported apart as ``build_s``).
* ``contended``: the same workloads with quota for 70% of the demand (borrowing, reclaim,
  preemption, pending reasons): workloads decided per second.
* ``placed``: 15,000 workloads of one shape (100m cpu, 64Mi, one pod: the end-to-end
  benchmark's Jobs) over the same queues, admitted and placed on 150 nodes: admitted/s with
  the placement check, and the same decision with the placer's look-ahead turned off
  (``placed_single_per_s``), run after it in the same process.
* ``rss``: 5,000 nodes and 50,000 pending workloads over the same queues (quota for a tenth
  of them), with the placement check on the nodes: peak RSS of the whole process.

Prints one line per case and, last, ``name=value`` pairs.

    python benchmarks/admission.py [--workloads 15000] [--queues 100] [--cohorts 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from typing import Any

import kubehpc
from kubehpc.sched.admission import AdmissionConfig, build, decide
from kubehpc.sched.admission import nodes as node_placer

Obj = dict[str, Any]


def peak_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 if sys.platform != "darwin" else rss / 1024 / 1024


def stamp(i: int) -> str:
    return f"2026-12-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"


def setup(queues: int, cohorts: int, scale: int) -> dict[str, list[Obj]]:
    """Queues and flavors; ``scale`` sizes the nominal quotas (cpu per lending queue)."""
    flavors = [{"metadata": {"name": "default"}, "spec": {}}]
    cqs, lqs = [], []
    for q in range(queues):
        lends = (q // cohorts) % 2 == 0  # half of every cohort lends, half borrows
        cpu = scale if lends else scale // 3
        quota: Obj = {"name": "cpu", "nominalQuota": cpu}
        mem: Obj = {"name": "memory", "nominalQuota": f"{cpu * 2}Gi"}
        if not lends:
            quota["borrowingLimit"] = scale
            mem["borrowingLimit"] = f"{scale * 2}Gi"
        cqs.append(
            {
                "metadata": {"name": f"cq-{q:03d}"},
                "spec": {
                    "namespaceSelector": {},
                    "cohortName": f"cohort-{q % cohorts}",
                    "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [{"name": "default", "resources": [quota, mem]}],
                        }
                    ],
                },
            }
        )
        lqs.append(
            {
                "metadata": {"namespace": "default", "name": f"lq-{q:03d}"},
                "spec": {"clusterQueue": f"cq-{q:03d}"},
            }
        )
    return {"cluster_queues": cqs, "resource_flavors": flavors, "local_queues": lqs}


def workloads(count: int, queues: int, uniform: bool = False) -> list[Obj]:
    """1, 2 or 4 cpu with as many Gi of memory in turn; ``uniform``: all 100m cpu and 64Mi."""
    out = []
    for i in range(count):
        cpu = (1, 2, 4)[i % 3]
        requests = {"cpu": "100m", "memory": "64Mi"} if uniform else {"cpu": str(cpu), "memory": f"{cpu}Gi"}
        out.append(
            {
                "metadata": {
                    "namespace": "default",
                    "name": f"wl-{i:06d}",
                    "uid": f"uid-{i:06d}",
                    "creationTimestamp": stamp(i),
                },
                "spec": {
                    "queueName": f"lq-{(i * 7) % queues:03d}",
                    "priority": (50, 100, 200)[(i // 3) % 3],
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "main",
                                            "image": "busybox",
                                            "resources": {"requests": requests},
                                        }
                                    ]
                                }
                            },
                        }
                    ],
                },
            }
        )
    return out


def nodes(count: int) -> list[Obj]:
    return [
        {
            "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 4}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        }
        for i in range(count)
    ]


def time_decide(snap: Any, repeat: int) -> tuple[float, Any]:
    """The best of ``repeat`` decisions on ``snap``: (seconds, decisions)."""
    best, decisions = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        decisions = decide(snap, 0.0)
        best = min(best, time.perf_counter() - start)
    return best, decisions


def snapshot(objs: dict[str, list[Obj]], wls: list[Obj], node_objs: list[Obj] | None = None) -> Any:
    return build.snapshot_from_objects(
        cluster_queues=objs["cluster_queues"],
        cohorts=[],
        resource_flavors=objs["resource_flavors"],
        local_queues=objs["local_queues"],
        workloads=wls,
        namespaces=[{"metadata": {"name": "default"}}],
        nodes=node_objs or [],
        config=AdmissionConfig(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=15_000)
    parser.add_argument("--queues", type=int, default=100)
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, Any] = {}

    # Enough quota for (nearly) every workload: 15,000 x 2.33 cpu over 100 queues.
    per_queue = args.workloads * 7 // 3 // args.queues
    objs = setup(args.queues, args.cohorts, scale=per_queue * 3 // 2)
    wls = workloads(args.workloads, args.queues)
    start = time.perf_counter()
    snap = snapshot(objs, wls)
    build_s = time.perf_counter() - start
    best = float("inf")
    decisions = None
    for _ in range(args.repeat):
        gc.collect()
        start = time.perf_counter()
        decisions = decide(snap, 0.0)
        best = min(best, time.perf_counter() - start)
    assert decisions is not None
    admitted = len(decisions.admissions)
    borrowing = sum(1 for a in decisions.admissions if a.borrowing)
    print(
        f"admit    {args.workloads} workloads, {args.queues} ClusterQueues, {args.cohorts} cohorts: "
        f"{admitted} admitted ({borrowing} borrowing), {len(decisions.pending)} pending "
        f"in {best * 1000:.0f} ms "
        f"= {admitted / best:.0f} admitted/s; snapshot built in {build_s * 1000:.0f} ms"
    )
    figures["admitted"] = admitted
    figures["admitted_per_s"] = round(admitted / best)
    figures["build_s"] = round(build_s, 3)

    # Contended: quota for 70% of the demand, so queues borrow, reclaim and preempt, and the
    # rest wait with a reason.
    tight = setup(args.queues, args.cohorts, scale=per_queue * 7 // 10)
    snap = snapshot(tight, wls)
    start = time.perf_counter()
    decisions = decide(snap, 0.0)
    seconds = time.perf_counter() - start
    decided = len(decisions.admissions) + len(decisions.pending)
    print(
        f"contended quota for 70% of the demand: {len(decisions.admissions)} admitted, "
        f"{len(decisions.preemptions)} preemptions, {len(decisions.pending)} pending explained "
        f"in {seconds * 1000:.0f} ms = {decided / seconds:.0f} workloads decided/s"
    )
    figures["contended_decided_per_s"] = round(decided / seconds)

    # Placed: one shape, as the end-to-end benchmark's Jobs, on 150 nodes (16,500 pod slots).
    snap = snapshot(objs, workloads(args.workloads, args.queues, uniform=True), nodes(150))
    ahead_s, decisions = time_decide(snap, args.repeat)
    placed = len(decisions.admissions)
    lookahead = node_placer._MAX_LOOKAHEAD
    node_placer._MAX_LOOKAHEAD = 1  # the baseline: one scoring pass of every node per pod
    try:
        single_s, single = time_decide(snap, args.repeat)
    finally:
        node_placer._MAX_LOOKAHEAD = lookahead
    same = [a.pod_sets for a in decisions.admissions] == [a.pod_sets for a in single.admissions]
    print(
        f"placed   {args.workloads} workloads of one shape on 150 nodes: {placed} admitted and placed "
        f"in {ahead_s * 1000:.0f} ms = {placed / ahead_s:.0f} admitted/s; without looking ahead "
        f"{single_s * 1000:.0f} ms = {placed / single_s:.0f}/s (same nodes: {'yes' if same else 'NO'})"
    )
    if not same:
        raise SystemExit("the look-ahead placed pods elsewhere than single placements did")
    figures["placed_per_s"] = round(placed / ahead_s)
    figures["placed_single_per_s"] = round(placed / single_s)

    # Memory: 5,000 nodes, 50,000 pending workloads, quota for about a tenth of them.
    del snap, decisions, wls
    gc.collect()
    small = setup(args.queues, args.cohorts, scale=args.pending * 7 // 3 // args.queues // 10)
    wls = workloads(args.pending, args.queues)
    node_objs = nodes(args.nodes)
    start = time.perf_counter()
    snap = snapshot(small, wls, node_objs)
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    decisions = decide(snap, 0.0)
    seconds = time.perf_counter() - start
    rss = peak_rss_mib()
    print(
        f"rss      {args.nodes} nodes, {args.pending} workloads: "
        f"{len(decisions.admissions)} admitted and placed, "
        f"{len(decisions.pending)} pending explained in {seconds:.2f} s (snapshot {build_s:.2f} s); "
        f"peak RSS {rss:.0f} MiB"
    )
    figures["pending_explained_per_s"] = round(len(decisions.pending) / seconds)
    figures["peak_rss_mib"] = round(rss, 1)
    figures["native"] = "yes" if kubehpc.NATIVE_OFF_REASON is None else "no"  # compiled (mypyc)?
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
