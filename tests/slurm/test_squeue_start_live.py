"""On the embedded cluster (``kubehpc up -d``): an sbatch job waiting behind a running one gets the
scheduler's estimated start — the running job's admission + its ``--time`` — in ``squeue --start``
and in ``kubehpc get workloads -o wide``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: batch}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: memory, nominalQuota: 64Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: batch}
spec: {clusterQueue: batch}
"""


def kubehpc(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")}
    return subprocess.run(
        [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=cwd,
        check=False,
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("squeue-start-home")
    started = kubehpc(root, "up", "-d", "--port", "0")
    assert started.returncode == 0, started.stderr
    yield root
    kubehpc(root, "down")


def submit(home: Path, cwd: Path, *args: str) -> str:
    proc = kubehpc(home, "sbatch", "-p", "batch", "-c", "1", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


def workload_of(home: Path, job_id: str) -> dict[str, Any]:
    items = json.loads(kubehpc(home, "get", "workloads", "-o", "json").stdout)["items"]
    for wl in items:
        owner = (wl["metadata"].get("ownerReferences") or [{}])[0].get("name", "")
        if owner.startswith(f"slurm-{job_id}"):
            return dict(wl)
    raise AssertionError(f"no Workload for job {job_id}")


def reserved_at(wl: dict[str, Any]) -> float:
    for c in wl["status"]["conditions"]:
        if c["type"] == "QuotaReserved" and c["status"] == "True":
            return datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00")).timestamp()
    raise AssertionError("not admitted")


def test_a_waiting_job_shows_the_running_jobs_end_as_its_start(home: Path, tmp_path: Path) -> None:
    (tmp_path / "queues.yaml").write_text(QUEUES)
    applied = kubehpc(home, "apply", "-f", str(tmp_path / "queues.yaml"))
    assert applied.returncode == 0, applied.stderr
    first = submit(home, tmp_path, "-t", "10", "--wrap", "sleep 120")
    second = submit(home, tmp_path, "-t", "5", "--wrap", "true")
    try:
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline:
            out = kubehpc(home, "squeue", "--start").stdout.splitlines()
            rows = [r for r in out[1:] if r.split()[0] == second]
            if rows and "N/A" not in rows[0]:
                line = rows[0]
                break
            time.sleep(1.0)
        header = "JOBID PARTITION NAME USER ST START_TIME NODES SCHEDNODES NODELIST(REASON)"
        assert " ".join(out[0].split()) == header
        assert line, f"no estimate for job {second}: {out}"
        fields = line.split()
        expected = reserved_at(workload_of(home, first)) + 600
        shown = time.mktime(time.strptime(fields[5], "%Y-%m-%dT%H:%M:%S"))  # local time, as Slurm
        assert abs(shown - expected) <= 1, (fields[5], expected)
        assert fields[7] == "(null)" and fields[4] == "PD"
        wide = kubehpc(home, "get", "workloads", "-o", "wide").stdout.splitlines()
        assert "ESTIMATED START" in wide[0]
        stamp = datetime.fromtimestamp(expected, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert any(stamp in row for row in wide[1:]), wide
    finally:
        kubehpc(home, "scancel", first, second)
