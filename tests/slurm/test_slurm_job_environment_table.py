"""Point 2 of the issue as a table: every Slurm variable it names, read from inside the job (the
pod's command run as a node runs it), for a one-node job, the first pod of a three-node job and
an array task. A coverage check fails when a variable of point 2 has no row."""

from __future__ import annotations

from pathlib import Path

import pytest
from podkit import run_pod
from slurmkit import script, submit

POINT_2 = [
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_NTASKS",
    "SLURM_NNODES",
    "SLURM_JOB_NODELIST",
    "SLURM_CPUS_PER_TASK",
    "SLURM_GPUS_ON_NODE",
    "SLURM_SUBMIT_DIR",
    "SLURM_PROCID",
    "SLURM_LOCALID",
]

# (directives, pod index, variables the script must see)
CASES = {
    "one-node": (
        ("-J envjob", "-n 2", "-c 3", "--gres=gpu:2"),
        0,
        {
            "SLURM_JOB_ID": "100",
            "SLURM_JOB_NAME": "envjob",
            "SLURM_NTASKS": "2",
            "SLURM_NNODES": "1",
            "SLURM_JOB_NODELIST": "slurm-100-0",
            "SLURM_CPUS_PER_TASK": "3",
            "SLURM_GPUS_ON_NODE": "2",
            "SLURM_SUBMIT_DIR": "/home/alice/run",
            "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0",
        },
    ),
    "three-nodes": (
        ("-N 3", "--ntasks-per-node=4", "--gpus-per-node=1"),
        0,
        {
            "SLURM_NNODES": "3",
            "SLURM_NTASKS": "12",
            "SLURM_JOB_NODELIST": "slurm-100-[0-2]",
            "SLURM_GPUS_ON_NODE": "1",
            "SLURM_PROCID": "0",
            "SLURM_NODEID": "0",
        },
    ),
    "array-task": (
        (
            "-J arr",
            "--array=3-12:3%2",
        ),
        1,  # the second task: id 6
        {
            "SLURM_ARRAY_JOB_ID": "100",
            "SLURM_ARRAY_TASK_ID": "6",
            "SLURM_ARRAY_TASK_MIN": "3",
            "SLURM_ARRAY_TASK_MAX": "12",
            "SLURM_ARRAY_TASK_COUNT": "4",
            "SLURM_JOB_ID": "102",  # as Slurm numbers tasks: the array's id + index + 1
            "SLURM_JOB_NAME": "arr",
            "SLURM_JOB_NODELIST": "slurm-100-1",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_script_sees_the_slurm_environment_the_issue_names(tmp_path: Path, case: str) -> None:
    directives, index, expected = CASES[case]
    body = 'env | grep -E "^SLURM_" | sort'
    objs = submit(script(*directives, f"-D {tmp_path}", "-o env.out", body=body))
    proc = run_pod(objs, tmp_path, index=index)
    assert proc.returncode == 0, proc.stderr
    seen = dict(line.split("=", 1) for line in (tmp_path / "env.out").read_text().splitlines())
    assert {k: seen.get(k) for k in expected} == expected


def test_every_variable_of_point_2_has_a_row() -> None:
    covered = {name for _, _, expected in CASES.values() for name in expected}
    assert set(POINT_2) <= covered, sorted(set(POINT_2) - covered)
