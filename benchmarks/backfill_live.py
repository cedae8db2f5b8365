"""What live backfill and start-time estimates cost the admission core: ``decide`` on one deep
ClusterQueue with backfill none / easy / conservative, and with ``estimate=True``.

    .venv/bin/python benchmarks/backfill_live.py [--pending 2000] [--running 200] [--repeat 5]

The queue: one ClusterQueue of 1,000 cpus, ``--running`` workloads holding all but 3 of them
(each with a runtime estimate), and ``--pending`` workloads with estimates: a 64-cpu head that
does not fit, then 1-16 cpus each, so every later workload is tested against the reservations.
Times are the median of ``--repeat`` calls of ``decide`` on the same snapshot (building the
snapshot is not timed). The last line is
``name=value ...``; ratios are against ``none`` in the same run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

from kubehpc.sched.admission import AdmissionConfig, build, decide

Obj = dict[str, Any]
QUOTA = 1000


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def workload(name: str, cpus: int, estimate: int, created: float, admitted_at: float | None = None) -> Obj:
    obj: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": name,
            "creationTimestamp": stamp(created),
            "annotations": {"kubehpc.io/runtime-estimate-seconds": str(estimate)},
        },
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpus)}}}]}
                    },
                }
            ],
        },
    }
    if admitted_at is not None:
        at = stamp(admitted_at)
        obj["status"] = {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": str(cpus)}, "count": 1}
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "r",
                    "message": "",
                    "lastTransitionTime": at,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "r",
                    "message": "",
                    "lastTransitionTime": at,
                },
            ],
        }
    return obj


def objects(pending: int, running: int, seed: int = 1) -> list[Obj]:
    rng = random.Random(seed)
    out = []
    left = QUOTA - 3
    for i in range(running):
        cpus = max(1, min(left - (running - i - 1), rng.randint(1, 2 * QUOTA // running)))
        left -= cpus
        out.append(
            workload(f"run-{i}", cpus, rng.randint(600, 7200), 0.0, admitted_at=float(rng.randint(0, 600)))
        )
    for i in range(pending):
        out.append(workload(f"wait-{i}", rng.randint(1, 16) if i else 64, rng.randint(60, 7200), 1000.0 + i))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--running", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    queues = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": QUOTA}]}],
                    }
                ],
            },
        },
    ]
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
    }
    wls = objects(args.pending, args.running)
    now = 10_000.0
    figures: dict[str, str] = {"pending": str(args.pending), "running": str(args.running)}
    base = 0.0
    for name, policy, estimate in (
        ("none", "none", False),
        ("easy", "easy", False),
        ("conservative", "conservative", False),
        ("none_estimates", "none", True),
    ):
        snap = build.snapshot_from_objects(
            cluster_queues=queues,
            cohorts=[],
            resource_flavors=[queues[0]],
            local_queues=[lq],
            workloads=wls,
            namespaces=[],
            config=AdmissionConfig(backfill=policy),
        )
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            d = decide(snap, now, estimate=estimate)
            times.append(time.perf_counter() - t0)
        ms = statistics.median(times) * 1000
        if name == "none":
            base = ms
        known = sum(p.estimated_start is not None for p in d.pending)
        print(
            f"{name:>15}: {ms:8.1f} ms per decide ({ms / base:4.2f}x none); admitted {len(d.admissions)}, "
            f"pending {len(d.pending)}" + (f", {known} with an estimated start" if estimate else "")
        )
        figures[f"{name}_ms"] = f"{ms:.1f}"
        figures[f"{name}_ratio"] = f"{ms / base:.2f}"
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
