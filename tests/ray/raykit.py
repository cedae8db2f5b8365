"""Helpers for the KubeRay tests: manifests of small Ray nodes, an in-process control plane
with the real node agent (pods are `ray start` processes of this host), and a Ray driver run
in a subprocess against a cluster's GCS (so the test process never loads Ray itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
RAY = "ray.io/v1"
NS = "default"
# Small Ray nodes: this machine has 2 shared cores. One Ray CPU each (the limit), a small
# request so the scheduler places them all, a 100 MB object store.
OBJECT_STORE = "100000000"


def need_ray() -> None:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "ray").exists():
        raise AssertionError(
            f"Ray is not installed in {bin_dir.parent}: `make test` installs the `ray` extra (pyproject)"
        )


def node_template(name: str, cpu: str = "1", memory: str = "1Gi") -> Obj:
    return {
        "spec": {
            "containers": [
                {
                    "name": name,
                    "image": "rayproject/ray:2.60.0",
                    "resources": {
                        "limits": {"cpu": cpu, "memory": memory},
                        "requests": {"cpu": "100m", "memory": "256Mi"},
                    },
                }
            ]
        }
    }


def cluster_spec(
    workers: list[Obj] | None = None, *, dashboard: bool = False, head_cpu: str = "1", **extra: Any
) -> Obj:
    head_params = {"object-store-memory": OBJECT_STORE}
    if not dashboard:
        head_params["include-dashboard"] = "false"
    return {
        "rayVersion": "2.60.0",
        "headGroupSpec": {"rayStartParams": head_params, "template": node_template("ray-head", head_cpu)},
        "workerGroupSpecs": workers or [],
        **extra,
    }


def worker_group(name: str, replicas: int, lo: int, hi: int, **params: str) -> Obj:
    return {
        "groupName": name,
        "replicas": replicas,
        "minReplicas": lo,
        "maxReplicas": hi,
        "rayStartParams": {"object-store-memory": OBJECT_STORE, **params},
        "template": node_template("ray-worker"),
    }


def raycluster(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": RAY,
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def wait_until(what: str, probe: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last seen: {last!r}")


def run_driver(gcs_address: str, code: str, timeout: float = 120) -> Obj:
    """Run ``code`` as a Ray driver connected to ``gcs_address``; it sets ``result`` (JSON)."""
    script = (
        "import json, ray\n"
        f"ray.init(address={gcs_address!r}, logging_level='ERROR', log_to_driver=False)\n"
        f"{code}\n"
        "print('RESULT=' + json.dumps(result))\n"
    )
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # as the embedded cluster's Ray nodes
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT="):
            out: Obj = json.loads(line[len("RESULT=") :])
            return out
    raise AssertionError(
        f"the Ray driver failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
