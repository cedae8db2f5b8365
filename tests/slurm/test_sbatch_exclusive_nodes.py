"""``sbatch --exclusive`` on the embedded cluster: the job gets its nodes to itself — it avoids
nodes that run other pods, later jobs avoid its nodes, and a job that cannot get a node to
itself waits with kube-scheduler's inter-pod anti-affinity reasons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CLUSTER = """\
apiVersion: kubehpc.io/v1alpha1
kind: ClusterConfig
metadata: {name: exclusive}
spec:
  nodePools:
    - name: cpu
      count: 2
      cpu: "4"
      memory: 8Gi
"""


def kubehpc(home: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")}
    return subprocess.run(
        [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=home,
        check=False,
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("exclusive-home")
    config = root.parent / f"{root.name}-cluster.yaml"
    config.write_text(CLUSTER)
    started = kubehpc(root, "up", "-d", "--port", "0", "--cluster", str(config))
    assert started.returncode == 0, started.stderr
    yield root
    kubehpc(root, "scancel", "-u", os.environ.get("USER", "root"))
    kubehpc(root, "down")


def sbatch(home: Path, *args: str) -> str:
    proc = kubehpc(home, "sbatch", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


def pod_of(home: Path, job: str) -> dict[str, Any]:
    out = kubehpc(home, "get", "pods", "-l", f"batch.kubernetes.io/job-name=slurm-{job}", "-o", "json")
    assert out.returncode == 0, out.stderr
    items = json.loads(out.stdout)["items"]
    return items[0] if items else {}


def node_of(home: Path, job: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = (pod_of(home, job).get("spec") or {}).get("nodeName")
        if node:
            return str(node)
        time.sleep(0.3)
    raise AssertionError(f"job {job} was not placed within {timeout} s")


def unschedulable_message(home: Path, job: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = pod_of(home, job).get("status") or {}
        for cond in status.get("conditions") or ():
            if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
                return str(cond.get("message", ""))
        time.sleep(0.3)
    raise AssertionError(f"job {job} never reported why it waits")


def test_an_exclusive_job_gets_a_node_to_itself_and_keeps_it(home: Path) -> None:
    # A 2-CPU job on one node; the exclusive job must take the other one.
    busy = sbatch(home, "-J", "busy", "-c", "2", "--wrap", "sleep 120")
    busy_node = node_of(home, busy)
    exclusive = sbatch(home, "-J", "whole", "--exclusive", "-c", "1", "--wrap", "sleep 120")
    exclusive_node = node_of(home, exclusive)
    assert exclusive_node != busy_node

    # A plain 1-CPU job would score better on the emptier exclusive node (LeastAllocated);
    # the exclusive job's anti-affinity keeps it away all the same.
    later = sbatch(home, "-J", "later", "-c", "1", "--wrap", "sleep 120")
    assert node_of(home, later) == busy_node

    # No node is free of pods now: a second exclusive job waits, and says why in
    # kube-scheduler's words (its own anti-affinity on one node, the first job's on the other).
    second = sbatch(home, "-J", "second", "--exclusive", "-c", "1", "--wrap", "true")
    assert unschedulable_message(home, second) == (
        "0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules, "
        "1 node(s) didn't satisfy existing pods anti-affinity rules."
    )

    # Once the exclusive job is gone, its node takes the waiting exclusive job.
    assert kubehpc(home, "scancel", exclusive).returncode == 0
    assert node_of(home, second) == exclusive_node
