"""On the embedded cluster (``kubehpc up -d``): sbatch scripts run, write their output files with
the Slurm environment, and show up in squeue, sacct and scancel as Slurm shows them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def kubehpc(
    home: Path, *args: str, cwd: Path | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")}
    return subprocess.run(
        [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
    )


# One node with more CPUs than an array's throttle lets it use, so the throttle is what limits.
CLUSTER = """\
apiVersion: kubehpc.io/v1alpha1
kind: ClusterConfig
metadata: {name: slurm-e2e}
spec:
  nodePools:
    - name: cpu
      count: 1
      cpu: "8"
      memory: 16Gi
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("slurm-home")
    config = root.parent / f"{root.name}-cluster.yaml"
    config.write_text(CLUSTER)
    started = kubehpc(root, "up", "-d", "--port", "0", "--cluster", str(config))
    assert started.returncode == 0, started.stderr
    yield root
    kubehpc(root, "down")


def wait_for(path: Path, predicate: object = None, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text()
            if predicate is None or predicate(text):  # type: ignore[operator]
                return text
        time.sleep(0.2)
    raise AssertionError(f"{path} did not appear (or stayed incomplete)")


def submitted_id(proc: subprocess.CompletedProcess[str]) -> int:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Submitted batch job ")
    return int(proc.stdout.split()[-1])


def squeue_state(home: Path, job: str) -> str:
    out = kubehpc(home, "squeue", "-t", "all", "-h", "-o", "%i %T").stdout
    states = dict(line.split() for line in out.splitlines())
    return states.get(job, "")


def wait_state(home: Path, job: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if squeue_state(home, job) == state:
            return
        time.sleep(0.3)
    raise AssertionError(f"job {job} is {squeue_state(home, job)!r}, not {state}")


def test_a_batch_script_writes_its_output_file_with_the_slurm_environment(home: Path, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(
        "#!/bin/bash\n#SBATCH -J e2e\n#SBATCH -c 1\n#SBATCH -o out-%x-%j.txt\n"
        "env | grep ^SLURM | sort\necho done\n"
    )
    job_id = submitted_id(kubehpc(home, "sbatch", "job.sh", cwd=tmp_path))
    text = wait_for(tmp_path / f"out-e2e-{job_id}.txt", lambda t: "done" in t)
    env = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert env["SLURM_JOB_ID"] == str(job_id)
    assert env["SLURM_JOB_NAME"] == "e2e"
    assert env["SLURM_SUBMIT_DIR"] == str(tmp_path)
    assert env["SLURM_JOB_NODELIST"] == f"slurm-{job_id}-0"
    assert env["SLURM_CPUS_PER_TASK"] == "1"
    wait_state(home, str(job_id), "COMPLETED")
    sacct = kubehpc(home, "sacct", "-a", "-P", "-n", "-j", str(job_id), "-o", "JobID,JobName,State,ExitCode")
    assert sacct.stdout.strip() == f"{job_id}|e2e|COMPLETED|0:0"


def test_an_array_runs_each_task_with_its_id_and_output_file(home: Path, tmp_path: Path) -> None:
    proc = kubehpc(
        home,
        "sbatch",
        "--array=1-5:2%2",
        "--wrap",
        "echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID",
        cwd=tmp_path,
    )
    job_id = submitted_id(proc)
    for task in (1, 3, 5):
        text = wait_for(tmp_path / f"slurm-{job_id}_{task}.out", lambda t: t.endswith("\n"))
        assert text == f"task {task} of {job_id}\n"


def test_a_failing_script_is_failed_in_sacct_with_its_exit_code(home: Path, tmp_path: Path) -> None:
    job_id = submitted_id(kubehpc(home, "sbatch", "--wrap", "echo before; exit 3", cwd=tmp_path))
    wait_state(home, str(job_id), "FAILED")
    sacct = kubehpc(home, "sacct", "-a", "-P", "-n", "-j", str(job_id), "-o", "State,ExitCode")
    assert sacct.stdout.strip() == "FAILED|3:0"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "before\n"


def test_a_held_job_waits_until_released(home: Path, tmp_path: Path) -> None:
    job_id = submitted_id(kubehpc(home, "sbatch", "--hold", "--wrap", "echo released", cwd=tmp_path))
    out = kubehpc(home, "squeue", "-h", "-j", str(job_id), "-o", "%t %R").stdout
    assert out.strip() == "PD (JobHeldUser)"
    assert kubehpc(home, "scontrol", "release", str(job_id)).returncode == 0
    assert wait_for(tmp_path / f"slurm-{job_id}.out", lambda t: t.endswith("\n")) == "released\n"


def test_scancel_stops_a_running_job_and_sacct_shows_it_cancelled(home: Path, tmp_path: Path) -> None:
    job_id = submitted_id(kubehpc(home, "sbatch", "--wrap", "echo started; sleep 60", cwd=tmp_path))
    wait_state(home, str(job_id), "RUNNING")
    assert kubehpc(home, "scancel", str(job_id)).returncode == 0
    wait_state(home, str(job_id), "CANCELLED")


def test_dependencies_release_after_success_and_cancel_after_failure(home: Path, tmp_path: Path) -> None:
    # The jobs depended on run until the test opens the gate (a file), so the dependents are
    # seen waiting however slowly the machine goes; a forgotten gate ends them after 2 minutes.
    gate = tmp_path / "gate"
    wait = f"for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.2; done"
    ok = submitted_id(kubehpc(home, "sbatch", "--wrap", wait, cwd=tmp_path))
    bad = submitted_id(kubehpc(home, "sbatch", "--wrap", f"{wait}; false", cwd=tmp_path))
    after_ok = submitted_id(kubehpc(home, "sbatch", f"-d afterok:{ok}", "--wrap", "echo ran", cwd=tmp_path))
    after_bad = submitted_id(kubehpc(home, "sbatch", f"-d afterok:{bad}", "--wrap", "echo ran", cwd=tmp_path))
    for dependent in (after_ok, after_bad):
        reason = kubehpc(home, "squeue", "-h", "-j", str(dependent), "-o", "%R").stdout.strip()
        assert reason == "(Dependency)", dependent
    gate.touch()
    wait_state(home, str(ok), "COMPLETED")
    wait_state(home, str(bad), "FAILED")
    assert wait_for(tmp_path / f"slurm-{after_ok}.out", lambda t: t.endswith("\n")) == "ran\n"
    wait_state(home, str(after_bad), "CANCELLED")
    assert not (tmp_path / f"slurm-{after_bad}.out").exists()


def test_a_two_node_job_runs_its_script_once_and_completes(home: Path, tmp_path: Path) -> None:
    job_id = submitted_id(
        kubehpc(
            home,
            "sbatch",
            "-N",
            "2",
            "--ntasks-per-node=2",
            "--wrap",
            "echo $SLURM_JOB_NODELIST $SLURM_NTASKS",
            cwd=tmp_path,
        )
    )
    assert (
        wait_for(tmp_path / f"slurm-{job_id}.out", lambda t: t.endswith("\n")) == f"slurm-{job_id}-[0-1] 4\n"
    )
    wait_state(home, str(job_id), "COMPLETED")


def test_sinfo_and_scontrol_show_the_embedded_node(home: Path) -> None:
    sinfo = kubehpc(home, "sinfo", "-h", "-o", "%P %a %D %N").stdout.split()
    assert sinfo[:3] == ["default*", "up", "1"]
    node = sinfo[3]
    shown = kubehpc(home, "scontrol", "show", "node", node).stdout
    assert shown.startswith(f"NodeName={node} ") and "State=" in shown
    assert kubehpc(home, "scontrol", "show", "partition").stdout.startswith("PartitionName=default\n")


def test_scancel_of_one_running_array_task_leaves_the_others_running(home: Path, tmp_path: Path) -> None:
    job_id = submitted_id(kubehpc(home, "sbatch", "--array=0-1", "--wrap", "sleep 60", cwd=tmp_path))
    wait_state(home, f"{job_id}_0", "RUNNING")
    wait_state(home, f"{job_id}_1", "RUNNING")
    assert kubehpc(home, "scancel", f"{job_id}_0").returncode == 0
    wait_state(home, f"{job_id}_0", "CANCELLED")
    assert squeue_state(home, f"{job_id}_1") == "RUNNING"
    assert kubehpc(home, "scancel", str(job_id)).returncode == 0
    wait_state(home, f"{job_id}_1", "CANCELLED")


def test_an_array_never_runs_more_tasks_at_once_than_its_throttle(home: Path, tmp_path: Path) -> None:
    # Each task counts the tasks running beside it (marker files) while it runs.
    count = "touch running.$SLURM_ARRAY_TASK_ID; sleep 1.5; ls running.* | wc -l >> seen"
    body = f"{count}; rm running.$SLURM_ARRAY_TASK_ID"
    job_id = submitted_id(
        kubehpc(home, "sbatch", "--array=0-5%2", "-o", "/dev/null", "--wrap", body, cwd=tmp_path)
    )
    for task in range(6):
        wait_state(home, f"{job_id}_{task}", "COMPLETED", timeout=120)
    seen = [int(n) for n in (tmp_path / "seen").read_text().split()]
    assert len(seen) == 6 and max(seen) <= 2, seen


def test_the_array_and_dependency_samples_run_unchanged(home: Path, tmp_path: Path, shared_dir: Path) -> None:
    # slurm-docker-cluster's own pair: an array, and a job meant for --dependency=afterok:<id>.
    # Only their output directory (/data on that site) is given on the command line.
    samples = shared_dir / "samples" / "sbatch"
    array = submitted_id(
        kubehpc(
            home,
            "sbatch",
            "-o",
            "array_test_%A_%a.out",
            str(samples / "slurmdocker-array_job.sh"),
            cwd=tmp_path,
        )
    )
    dependent = submitted_id(
        kubehpc(
            home,
            "sbatch",
            f"--dependency=afterok:{array}",
            "-o",
            "dependent_%j.out",
            str(samples / "slurmdocker-job_dependency.sh"),
            cwd=tmp_path,
        )
    )
    text = wait_for(tmp_path / f"dependent_{dependent}.out", lambda t: "Current time" in t, timeout=90)
    assert f"Job ID: {dependent}" in text
    for task in range(1, 6):
        out = (tmp_path / f"array_test_{array}_{task}.out").read_text()
        assert f"Array job task {task} of array job {array}" in out and f"Task {task} completed" in out
    sacct = kubehpc(
        home, "sacct", "-a", "-P", "-n", "-j", f"{array},{dependent}", "-o", "JobID,State,Start,End"
    )
    rows = [line.split("|") for line in sacct.stdout.split()]
    tasks_end = max(
        end for job, state, _, end in rows if job.startswith(f"{array}_") and state == "COMPLETED"
    )
    dependent_start = next(start for job, _, start, _ in rows if job == str(dependent))
    assert len([r for r in rows if r[0].startswith(f"{array}_")]) == 5
    assert dependent_start >= tasks_end, rows
