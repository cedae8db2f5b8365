"""Inside the pod: the runner sets per-task values, names and opens the output files as sbatch
does, and runs the script; its pattern expansion agrees with the Python one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from podkit import run_pod
from slurmkit import script, submit

from kubehpc.slurm.runner import RUNNER, array_runs, expand_pattern

ENV_DUMP = 'env | grep -E "^(SLURM|SLURMD)_" | sort'


def _functions() -> str:
    return RUNNER.split("idx=${JOB_COMPLETION_INDEX")[0]


VALUES = {"j": "1234", "A": "1230", "a": "7", "x": "train", "u": "alice", "N": "gpu3.cluster", "n": "0"}
BASH_ENV = {
    "SLURM_JOB_ID": "1234",
    "SLURM_ARRAY_JOB_ID": "1230",
    "SLURM_ARRAY_TASK_ID": "7",
    "SLURM_JOB_NAME": "train",
    "SLURM_JOB_USER": "alice",
    "SLURMD_NODENAME": "gpu3.cluster",
    "SLURM_NODEID": "0",
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("slurm-%j.out", "slurm-1234.out"),
        ("slurm-%A_%a.out", "slurm-1230_7.out"),
        ("%x-%j.out", "train-1234.out"),
        ("O-%x.%j", "O-train.1234"),
        ("%u/%N/%n-%t.log", "alice/gpu3/0-0.log"),
        ("100%%-%j", "100%-1234"),
        ("%6j.out", "001234.out"),
        ("%3a", "007"),
        ("%b", "7"),
        ("%J.%s", "1234.batch"),
        ("keep-%q-unknown", "keep-%q-unknown"),
        ("lit\\%j", "lit%j"),
        ("end%", "end%"),
    ],
)
def test_output_patterns_expand_as_in_sbatch_in_python_and_in_the_runner(pattern: str, expected: str) -> None:
    assert expand_pattern(pattern, VALUES) == expected
    bash = subprocess.run(
        ["bash", "-c", _functions() + 'kubehpc_expand "$P"'],
        env={**BASH_ENV, "P": pattern, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert bash.stdout == expected


def test_array_tasks_are_numbered_as_slurm_numbers_them(tmp_path: Path) -> None:
    # Real Slurm 22.05, array 3 with tasks 1,3,5: task 1 ran as job 4, task 3 as 5, task 5 as 3.
    objs = submit(script("--array=1-5:2", f"-D {tmp_path}", "-o t-%a-%j"), job_id=3)
    for index in range(3):
        assert run_pod(objs, tmp_path, index=index).returncode == 0
    assert sorted(p.name for p in tmp_path.glob("t-*")) == ["t-1-4", "t-3-5", "t-5-3"]


def test_the_runner_sets_the_per_process_variables_slurm_sets(tmp_path: Path) -> None:
    body = ENV_DUMP + '; echo "PID_MATCH=$([ $$ = $SLURM_TASK_PID ] && echo y)"'
    assert run_pod(submit(script(f"-D {tmp_path}", "-o o", body=body)), tmp_path).returncode == 0
    env = dict(line.split("=", 1) for line in (tmp_path / "o").read_text().splitlines())
    assert (env["SLURM_TOPOLOGY_ADDR_PATTERN"], env["SLURM_PRIO_PROCESS"], env["PID_MATCH"]) == (
        "node",
        "0",
        "y",
    )
    assert env["SLURM_JOB_UID"].isdigit() and env["SLURM_JOB_GID"].isdigit()


def test_a_for_a_job_outside_an_array_is_slurms_no_value() -> None:
    assert expand_pattern("%a", {"j": "5"}) == "4294967294"


@pytest.mark.parametrize(
    ("ids", "runs"),
    [((0, 1, 2), "0:3:1"), ((0, 4, 8, 12), "0:4:4"), ((1, 3, 5, 6), "1:3:2,6:1:1"), ((7,), "7:1:1")],
)
def test_array_task_ids_are_passed_as_arithmetic_runs(ids: tuple[int, ...], runs: str) -> None:
    assert array_runs(ids) == runs


def test_a_batch_job_writes_its_output_where_sbatch_would_with_the_slurm_environment(tmp_path: Path) -> None:
    objs = submit(script("-J envtest", "-N 1", "-n 2", "-c 3", f"-D {tmp_path}/work", body=ENV_DUMP))
    proc = run_pod(objs, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "output in slurm-100.out" in proc.stdout
    env = dict(line.split("=", 1) for line in (tmp_path / "work" / "slurm-100.out").read_text().splitlines())
    assert env["SLURM_JOB_ID"] == "100"
    assert env["SLURM_JOB_NAME"] == "envtest"
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["SLURM_CPUS_ON_NODE"]) == ("2", "3", "6")
    assert (env["SLURM_JOB_NODELIST"], env["SLURMD_NODENAME"]) == ("slurm-100-0", "slurm-100-0")
    assert (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"]) == ("0", "0", "0")


def test_an_array_task_gets_its_task_id_and_own_job_id_from_the_completion_index(tmp_path: Path) -> None:
    objs = submit(script("--array=0-15:4", f"-D {tmp_path}", "-o arr-%A_%a-%j.out", body=ENV_DUMP))
    assert run_pod(objs, tmp_path, index=2).returncode == 0
    out = tmp_path / "arr-100_8-103.out"
    env = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert (env["SLURM_ARRAY_TASK_ID"], env["SLURM_ARRAY_JOB_ID"], env["SLURM_JOB_ID"]) == ("8", "100", "103")
    assert (env["SLURM_ARRAY_TASK_MIN"], env["SLURM_ARRAY_TASK_MAX"], env["SLURM_ARRAY_TASK_STEP"]) == (
        "0",
        "12",
        "4",
    )
    assert env["SLURM_JOB_NODELIST"] == "slurm-100-2"


def test_stderr_goes_to_its_own_file_when_error_is_given(tmp_path: Path) -> None:
    objs = submit(script(f"-D {tmp_path}", "-o o-%j", "-e e-%j", body="echo out; echo err >&2; exit 3"))
    proc = run_pod(objs, tmp_path)
    assert proc.returncode == 3
    assert (tmp_path / "o-100").read_text() == "out\n"
    assert (tmp_path / "e-100").read_text() == "err\n"


def test_append_mode_keeps_earlier_output(tmp_path: Path) -> None:
    (tmp_path / "log").write_text("before\n")
    objs = submit(script(f"-D {tmp_path}", "-o log", "--open-mode=append", body="echo after"))
    run_pod(objs, tmp_path)
    assert (tmp_path / "log").read_text() == "before\nafter\n"


def test_an_output_file_that_cannot_be_opened_fails_the_job_and_says_why(tmp_path: Path) -> None:
    objs = submit(script(f"-D {tmp_path}", "-o missing-dir/out", body="echo never"))
    proc = run_pod(objs, tmp_path)
    assert proc.returncode == 1
    assert "cannot open output file" in proc.stderr


def test_a_script_that_is_not_valid_shell_fails_with_its_output_kept(tmp_path: Path) -> None:
    objs = submit(script(f"-D {tmp_path}", body="echo first\nif then fi (((\n"))
    proc = run_pod(objs, tmp_path)
    assert proc.returncode != 0
    text = (tmp_path / "slurm-100.out").read_text()
    assert text.startswith("first\n") and "syntax error" in text


def test_the_script_runs_with_its_own_interpreter_and_arguments(tmp_path: Path) -> None:
    text = '#!/bin/sh\n#SBATCH -J sh\necho "args: $1 $2"\n'
    objs = submit(text, f"-D{tmp_path}", args=("one", "two words"))
    proc = run_pod(objs, tmp_path)
    assert proc.returncode == 0
    assert (tmp_path / "slurm-100.out").read_text() == "args: one two words\n"


def test_stdin_is_empty_unless_input_is_given(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("fed\n")
    assert run_pod(submit(script(f"-D {tmp_path}", "-o a", body="cat")), tmp_path).returncode == 0
    assert (tmp_path / "a").read_text() == ""
    run_pod(submit(script(f"-D {tmp_path}", "-o b", "-i in.txt", body="cat")), tmp_path)
    assert (tmp_path / "b").read_text() == "fed\n"
