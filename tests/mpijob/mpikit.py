"""Helpers for MPIJob tests: a real MPI program compiled with mpicc, and the e2e control plane.

The control plane is the real ``kubehpc up`` of tests/e2e (its helper module is shared, not
copied); Open MPI comes from the Debian packages scripts/system-deps.sh installs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2ekit import CLUSTER, KUBECTL, Plane

__all__ = ["CLUSTER", "KUBECTL", "Plane", "build_mpi_program", "drain", "mpijob", "need_open_mpi", "wait_for"]

# Every rank reports its rank, the world size, the pod it runs in (POD_NAME comes from the
# downward API of the pod's own spec, so only a rank really started in that pod's environment
# sees it) and the sum of all ranks (an allreduce: the ranks really talked to each other).
PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int rank, size, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const char *pod = getenv("POD_NAME"), *role = getenv("K_MPI_JOB_ROLE");
  printf("rank=%d size=%d pod=%s role=%s sum=%d\n", rank, size, pod ? pod : "-", role ? role : "-", sum);
  fflush(stdout);
  MPI_Finalize();
  return argc > 1 ? atoi(argv[1]) : 0;
}
"""


def need_open_mpi() -> None:
    missing = [p for p in ("mpirun", "mpicc", "orted") if shutil.which(p) is None]
    if missing:
        raise AssertionError(
            f"Open MPI is missing ({', '.join(missing)}): `make test` installs it (scripts/system-deps.sh)"
        )


def build_mpi_program(directory: Path) -> Path:
    need_open_mpi()
    source = directory / "ranks.c"
    source.write_text(PROGRAM)
    binary = directory / "ranks"
    subprocess.run(["mpicc", "-o", str(binary), str(source)], check=True, capture_output=True)
    return binary


def mpijob(
    name: str,
    launcher_command: list[str],
    workers: int = 2,
    slots: int = 2,
    extra_spec: dict[str, Any] | None = None,
    worker_command: list[str] | None = None,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "name": "worker",
        "image": "mpi:latest",
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    }
    if worker_command is not None:
        worker["command"] = worker_command
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "slotsPerWorker": slots,
            "runPolicy": {"cleanPodPolicy": "Running"},
            **(extra_spec or {}),
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "launcher", "image": "mpi:latest", "command": launcher_command}
                            ]
                        }
                    },
                },
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [worker]}}},
            },
        },
    }


def wait_for(plane: Plane, name: str, condition: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    obj: dict[str, Any] = {}
    while time.monotonic() < deadline:
        out = plane.kubectl("get", "mpijob", name, "-o", "json", check=False)
        try:
            obj = json.loads(out)
        except ValueError:
            obj = {}
        for c in (obj.get("status") or {}).get("conditions") or ():
            if c.get("type") == condition and c.get("status") == "True":
                return obj
        time.sleep(0.2)
    raise AssertionError(f"MPIJob {name} not {condition} in {timeout}s: {json.dumps(obj.get('status'))}")


def drain(kubeconfig: Path) -> None:
    """Delete every workload and pod, so that no process outlives the test: stopping the
    control plane leaves pods running, as a restarting kubelet would."""
    subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "delete", "mpijobs,jobs,pods", "--all", "--timeout=60s"],
        capture_output=True,
        timeout=90,
        check=False,
    )
