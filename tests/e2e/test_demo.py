"""`make demo` runs the seed's jobs on the fake-GPU cluster and shows what ran where."""

from __future__ import annotations

import re
import subprocess
import sys

from e2ekit import REPO


def test_the_demo_runs_every_seed_job_to_completion_and_stops_its_cluster() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for job in ("compute-job-runnable", "sweep", "gpu-train", "mig-infer"):
        assert any(job in line and "Complete" in line for line in out.splitlines()), job
    assert "CUDA_VISIBLE_DEVICES=GPU-" in out and "NVIDIA_VISIBLE_DEVICES=MIG-" in out
    # The seed's MPIJob: its Open MPI ranks ran in the worker pods and saw their GPUs.
    assert re.search(r"rank \d in mpi-test-worker-\d sees CUDA_VISIBLE_DEVICES=GPU-", out), out[-3000:]
    # The seed's RayJob: a real two-node Ray cluster ran the entrypoint to success.
    assert "RayJob ray-test: Complete / SUCCEEDED" in out and "Ray nodes: 2" in out, out[-3000:]
    assert "kubehpc control plane stopped" in out
