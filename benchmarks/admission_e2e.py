"""Kueue admission end to end through the embedded control plane (issue 4): queue-labelled
batch/v1 Jobs created in the store → Workloads → admitted → Jobs unsuspended → pods created by
the Job controller → pods bound by the scheduler. Workloads per second = Jobs whose pod is
bound, divided by the time from the first create to the last bind.

The control plane runs in process with every controller (Job webhook, Kueue reconciler and
admission loop, Job controller, scheduler, GC) but no node agent: the nodes are plain Node
objects, as kwok registers them, so pods are bound and never run. Prints ``name=value`` last.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.client import ListOptions
from kubehpc.store.home import Home

Obj = dict[str, Any]


def node(i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


QUEUES: list[Obj] = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "default",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "100000"},
                                {"name": "memory", "nominalQuota": "100Ti"},
                            ],
                        }
                    ],
                }
            ],
        },
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
    },
]


def job(i: int) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"job-{i}", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["true"],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                }
            }
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubehpc-admission-e2e-") as tmp:
        plane = ControlPlane(Home(Path(tmp)), nodes=False).start()
        store = plane.store
        try:
            with store.batch():
                for i in range(args.nodes):
                    store.create(node(i))
                for obj in QUEUES:
                    store.create(obj)
            time.sleep(1.0)  # let the loops see the queues and nodes
            start = time.perf_counter()
            cpu_start = time.process_time()
            batch = 200
            for lo in range(0, args.jobs, batch):
                with store.batch():
                    for i in range(lo, min(lo + batch, args.jobs)):
                        store.create(job(i))
            created_s = time.perf_counter() - start
            bound = 0
            deadline = start + args.timeout
            while time.perf_counter() < deadline:
                pods = store.list("v1", "Pod", ListOptions(namespace="default")).items
                bound = sum(1 for p in pods if p.get("spec", {}).get("nodeName"))
                if bound >= args.jobs:
                    break
                time.sleep(0.05)
            elapsed = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
        finally:
            plane.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = bound / elapsed
    print(f"{args.jobs} queue-labelled Jobs on {args.nodes} nodes: created in {created_s:.2f}s")
    print(f"pods bound: {bound} in {elapsed:.2f}s -> {rate:.0f} workloads/s ({cpu:.1f}s CPU)")
    print(
        f"workloads={args.jobs} bound={bound} e2e_workloads_per_s={rate:.0f} "
        f"elapsed_s={elapsed:.2f} cpu_s={cpu:.1f} peak_rss_mb={rss_mb:.0f}"
    )


if __name__ == "__main__":
    main()
