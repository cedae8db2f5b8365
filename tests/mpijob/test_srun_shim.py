"""srun inside a batch job: the step's layout and task variables, and a real two-node job."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpikit import CLUSTER, drain

from kubehpc.slurm.srun import SrunError, SrunOptions, Task, layout, parse, task_environment

NODES = ["slurm-7-0", "slurm-7-1"]


def test_options_and_the_command_are_told_apart() -> None:
    opts = parse(["-n4", "--ntasks-per-node=2", "--mpi=pmi2", "-l", "hostname", "-s"])
    assert (opts.ntasks, opts.ntasks_per_node, opts.label, opts.command) == (4, 2, True, ["hostname", "-s"])
    assert opts.ignored == ["--mpi=pmi2"]


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(SrunError, match="--frobnicate"):
        parse(["--frobnicate", "x"])


def test_block_distribution_gives_lower_nodes_the_extra_task() -> None:
    tasks = layout(SrunOptions(["x"], ntasks=3), NODES, None)
    assert [(t.rank, t.local_id, t.node_id) for t in tasks] == [(0, 0, 0), (1, 1, 0), (2, 0, 1)]


def test_without_counts_one_task_per_node_or_the_jobs_task_count() -> None:
    assert len(layout(SrunOptions(["x"]), NODES, None)) == 2
    assert len(layout(SrunOptions(["x"]), NODES, 4)) == 4


def test_tasks_per_node_times_nodes() -> None:
    tasks = layout(SrunOptions(["x"], nodes=1, ntasks_per_node=2), NODES, None)
    assert [t.host for t in tasks] == ["slurm-7-0", "slurm-7-0"]


def test_more_nodes_than_the_job_has_is_an_error() -> None:
    with pytest.raises(SrunError, match="only 2 node"):
        layout(SrunOptions(["x"], nodes=3), NODES, None)


def test_task_variables() -> None:
    tasks = layout(SrunOptions(["x"], ntasks=4), NODES, None)
    env = task_environment(tasks[3], tasks, SrunOptions(["x"], ntasks=4))
    assert env["SLURM_PROCID"] == "3"
    assert env["SLURM_LOCALID"] == "1"
    assert env["SLURM_NODEID"] == "1"
    assert env["SLURM_STEP_NODELIST"] == "slurm-7-[0-1]"
    assert env["SLURM_STEP_TASKS_PER_NODE"] == "2(x2)"
    assert env["SLURMD_NODENAME"] == "slurm-7-1"
    assert isinstance(tasks[0], Task)


# --- a real two-node job on the embedded cluster -----------------------------------------------


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
    root = tmp_path_factory.mktemp("srun-home")
    cluster = root.parent / "srun-cluster.yaml"
    cluster.write_text(CLUSTER)  # two nodes: a two-node job needs them
    started = kubehpc(root, "up", "-d", "--port", "0", "--cluster", str(cluster))
    assert started.returncode == 0, started.stderr
    yield root
    drain(root / "kubeconfig")
    kubehpc(root, "down")


def test_srun_in_a_two_node_job_runs_tasks_on_both_pods(home: Path, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=2\n#SBATCH -c 1\n#SBATCH -o out-%j.txt\n"
        "export FROM_SCRIPT=exported\n"
        "srun bash -c 'echo task=$SLURM_PROCID local=$SLURM_LOCALID node=$SLURM_NODEID "
        "pod=$HOSTNAME index=$JOB_COMPLETION_INDEX var=$FROM_SCRIPT'\n"
        "echo srun-exit=$?\n"
        "srun -l -N 2 -n 2 bash -c 'echo labelled'\n"
        "echo labelled-done\n"
    )
    submitted = kubehpc(home, "sbatch", "job.sh", cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split()[-1]
    out = tmp_path / f"out-{job_id}.txt"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (out.exists() and "labelled-done" in out.read_text()):
        time.sleep(0.3)
    text = out.read_text() if out.exists() else ""
    tasks = sorted(re.findall(r"task=(\d) local=(\d) node=(\d) pod=(\S+) index=(\d) var=(\S+)", text))
    pod0, pod1 = f"slurm-{job_id}-0", f"slurm-{job_id}-1"
    assert tasks == [
        ("0", "0", "0", pod0, "0", "exported"),
        ("1", "1", "0", pod0, "0", "exported"),
        ("2", "0", "1", pod1, "1", "exported"),
        ("3", "1", "1", pod1, "1", "exported"),
    ], text
    assert "srun-exit=0" in text
    assert sorted(line for line in text.splitlines() if line.endswith(": labelled")) == [
        "0: labelled",
        "1: labelled",
    ]
