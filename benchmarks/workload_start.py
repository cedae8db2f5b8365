"""Time from apply to a multi-pod workload running, on the embedded cluster (issue 8).

One real ``kubehpc up`` (two CPU nodes) in a throw-away home; each measurement creates its
object through the HTTP API, as ``kubectl apply`` does, and stops the clock when the last of
its processes has started, read from what the processes themselves record (their start time
in a file), not from status fields that lag behind.

Measurements (each a function in ``MEASUREMENTS``; add a kind by adding one):

* ``job_1_pod`` — the baseline: a batch/v1 Job with one pod; apply -> its process runs.
* ``mpijob_4_ranks`` — an MPIJob with 2 workers x 2 slots: apply -> all 4 MPI ranks run
  (worker pods, launcher Job, launcher pod, mpirun, the launch agent into each worker, orted,
  the ranks).
* ``raycluster_3_nodes`` — a RayCluster with a head and 2 workers: apply -> ``ready`` (every
  pod's ``ray start`` has its raylet up and joined to the head's GCS).

Each is repeated ``--runs`` times; the median is printed, with the ratio to the baseline and
the machine's load. The last line is ``name=value`` figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

Obj = dict[str, Any]
CLUSTER = {
    "apiVersion": "kubehpc.io/v1alpha1",
    "kind": "ClusterConfig",
    "metadata": {"name": "bench"},
    "spec": {"nodePools": [{"name": "cpu", "count": 2, "cpu": "4", "memory": "8Gi"}]},
}
TIMEOUT_S = 120.0


def kubehpc(home: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def wait_for_lines(path: Path, count: int) -> list[float]:
    """The start times the processes wrote (one line each), once ``count`` are there."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists():
            lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
            if len(lines) >= count:
                return [float(ln) for ln in lines]
        time.sleep(0.01)
    raise SystemExit(f"{path}: {count} processes did not start within {TIMEOUT_S}s")


def stamp_command(path: Path, then: str = "sleep 1") -> str:
    # The process's own wall-clock start, appended atomically (one short write per line).
    return f"date +%s.%N >> {path}; {then}"


def job_1_pod(client: RestClient, work: Path, run: int) -> float:
    out = work / f"job-{run}.txt"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"base-{run}", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "command": ["sh", "-c", stamp_command(out)]}],
                }
            }
        },
    }
    start = time.time()
    client.create(job)
    return max(wait_for_lines(out, 1)) - start


def mpijob_4_ranks(client: RestClient, work: Path, run: int) -> float:
    out = work / f"mpi-{run}.txt"
    container = {"name": "c", "image": "mpi"}
    job = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": f"mpi-{run}", "namespace": "default"},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "All"},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    **container,
                                    "command": ["mpirun", "-np", "4", "sh", "-c", stamp_command(out)],
                                }
                            ]
                        }
                    },
                },
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}},
            },
        },
    }
    start = time.time()
    client.create(job)
    return max(wait_for_lines(out, 4)) - start


def ray_node(name: str) -> Obj:
    limits = {"cpu": "1", "memory": "1Gi"}
    resources = {"limits": limits, "requests": {"cpu": "100m", "memory": "256Mi"}}
    return {"spec": {"containers": [{"name": name, "image": "rayproject/ray", "resources": resources}]}}


def raycluster_3_nodes(client: RestClient, work: Path, run: int) -> float:
    """apply -> the RayCluster ``ready``: on the embedded cluster that is every pod running
    and its raylet (and the head's GCS) accepting connections, i.e. 3 Ray nodes up."""
    name = f"ray-{run}"
    store = {"object-store-memory": "100000000"}
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {**store, "include-dashboard": "false"},
                "template": ray_node("ray-head"),
            },
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": 2,
                    "minReplicas": 2,
                    "maxReplicas": 2,
                    "rayStartParams": store,
                    "template": ray_node("ray-worker"),
                }
            ],
        },
    }
    start = time.time()
    client.create(cluster)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if (client.get("ray.io/v1", "RayCluster", name, "default").get("status") or {}).get(
            "state"
        ) == "ready":
            took = time.time() - start
            break
        time.sleep(0.05)
    else:
        raise SystemExit(f"RayCluster {name} was not ready within {TIMEOUT_S}s")
    client.delete("ray.io/v1", "RayCluster", name, "default")
    # The next run starts on an idle host: wait for this cluster's pods (only: the finished
    # pods of the other measurements stay).
    mine = ListOptions(namespace="default", label_selector=f"ray.io/cluster={name}")
    while client.list("v1", "Pod", mine).items and time.monotonic() < deadline + 60:
        time.sleep(0.2)
    return took


MEASUREMENTS: dict[str, Callable[[RestClient, Path, int], float]] = {
    "job_1_pod": job_1_pod,
    "mpijob_4_ranks": mpijob_4_ranks,
    "raycluster_3_nodes": raycluster_3_nodes,
}
BASELINE = "job_1_pod"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=list(MEASUREMENTS), choices=list(MEASUREMENTS))
    args = parser.parse_args()
    if "mpijob_4_ranks" in args.only and shutil.which("mpirun") is None:
        raise SystemExit("mpirun is missing: install Open MPI (scripts/system-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="kubehpc-bench-") as tmp:
        work = Path(tmp)
        home = work / "home"
        cluster = work / "cluster.yaml"
        cluster.write_text(yaml.safe_dump(CLUSTER))
        kubehpc(home, "up", "-d", "--port", "0", "--cluster", str(cluster))
        try:
            client = RestClient(load_client_config(str(home / "kubeconfig")))
            medians: dict[str, float] = {}
            for name in [BASELINE, *(n for n in args.only if n != BASELINE)]:
                times = [MEASUREMENTS[name](client, work, run) for run in range(args.runs)]
                medians[name] = statistics.median(times)
                each = ", ".join(f"{t:.2f}" for t in times)
                print(f"{name}: median {medians[name]:.2f}s over {args.runs} runs ({each})")
            client.close()
        finally:
            kubehpc(home, "down")
    load = os.getloadavg()[0]
    figures = {f"{n}_s": f"{v:.2f}" for n, v in medians.items()}
    for name, value in medians.items():
        if name != BASELINE:
            figures[f"{name}_vs_{BASELINE}"] = f"{value / medians[BASELINE]:.2f}"
    figures["load1"] = f"{load:.2f}"
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
