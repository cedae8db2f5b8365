"""``kubehpc sbatch`` on the command line: --dry-run output, kubehpc's own flags beside
sbatch's, warnings and notes on stderr, errors as one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from kubehpc.cli.main import main
from kubehpc.cli.slurm_sbatch import split_own_flags


def run(*args: str, stdin: str = "", home: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = (["--home", str(home)] if home else []) + list(args)
    code = main(argv, stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def job_script(tmp_path: Path) -> Path:
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\n#SBATCH -J demo\n#SBATCH -t 10\n#SBATCH --mail-type=END\necho hi\n")
    return path


def test_dry_run_prints_the_objects_as_yaml_without_a_server(job_script: Path, tmp_path: Path) -> None:
    code, out, err = run("sbatch", "--dry-run", "-o", "yaml", str(job_script), home=tmp_path / "nohome")
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Job"]
    assert docs[1]["spec"]["activeDeadlineSeconds"] == 600
    assert docs[0]["data"]["script"].startswith("#!/bin/bash")


def test_dry_run_json_is_a_list(job_script: Path) -> None:
    code, out, _ = run("sbatch", "--dry-run=json", str(job_script))
    assert code == 0
    assert [o["kind"] for o in json.loads(out)["items"]] == ["ConfigMap", "Job"]


def test_a_script_output_option_is_not_taken_for_the_dry_run_format(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/bash\n#SBATCH -o yaml\n")
    code, out, _ = run("sbatch", "--dry-run", str(script))
    job = list(yaml.safe_load_all(out))[1]
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert code == 0 and env["KUBEHPC_SLURM_OUTPUT"] == "yaml"


def test_options_that_change_meaning_are_listed_on_stderr(job_script: Path) -> None:
    _, _, err = run("sbatch", "--dry-run", str(job_script))
    assert "sbatch: note: " in err and "--mail-type=END: no mail is sent" in err


def test_the_script_comes_from_stdin_when_none_is_named() -> None:
    code, out, _ = run("sbatch", "--dry-run", "-J", "piped", stdin="#!/bin/sh\necho x\n")
    assert code == 0
    assert list(yaml.safe_load_all(out))[1]["metadata"]["annotations"]["slurm.kubehpc.io/job-name"] == "piped"


def test_a_bad_directive_is_one_error_line_naming_file_and_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.sh"
    script.write_text("#!/bin/bash\n#SBATCH --time=5x\n")
    code, _, err = run("sbatch", "--dry-run", str(script))
    assert code == 1
    assert (
        err.strip()
        == f'error: {script}: line 2: --time: invalid time limit "5x": use minutes, MM:SS, '
        + ("HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED")
    )


def test_a_missing_script_file_is_an_error() -> None:
    code, _, err = run("sbatch", "--dry-run", "/nonexistent/job.sh")
    assert code == 1 and "cannot read the batch script" in err


def test_dry_run_takes_the_job_id_from_jobid(job_script: Path) -> None:
    _, out, _ = run("sbatch", "--dry-run", "--jobid=4242", str(job_script))
    assert list(yaml.safe_load_all(out))[1]["metadata"]["name"] == "slurm-4242"


@pytest.mark.parametrize(
    ("argv", "own", "rest"),
    [
        (["--dry-run", "-N", "2", "x.sh"], {"dry-run": "yaml"}, ["-N", "2", "x.sh"]),
        (["--namespace", "ns", "-J", "--dry-run", "x.sh"], {"namespace": "ns"}, ["-J", "--dry-run", "x.sh"]),
        (
            ["--dry-run", "-o", "json", "-o", "out.txt", "x.sh"],
            {"dry-run": "json"},
            ["-o", "out.txt", "x.sh"],
        ),
        (["x.sh", "--dry-run"], {}, ["x.sh", "--dry-run"]),
        (["--mapping=m.yaml", "--wrap", "true"], {"mapping": "m.yaml"}, ["--wrap", "true"]),
    ],
)
def test_kubehpc_flags_are_told_apart_from_sbatch_options_and_script_arguments(
    argv: list[str], own: dict[str, str], rest: list[str]
) -> None:
    assert split_own_flags(argv) == (own, rest)


def test_a_mapping_file_is_read_and_checked(job_script: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "m.yaml"
    mapping.write_text("defaultPartition: batch\npartitions: {batch: {localQueue: lq}}\n")
    _, out, _ = run("sbatch", "--dry-run", f"--mapping={mapping}", str(job_script))
    assert list(yaml.safe_load_all(out))[1]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lq"
    mapping.write_text("partitions: {batch: {queue: lq}}\n")
    code, _, err = run("sbatch", "--dry-run", f"--mapping={mapping}", str(job_script))
    assert code == 1 and "partitions.batch.queue: unknown field" in err


def test_help_prints_the_usage() -> None:
    code, out, _ = run("sbatch", "--help")
    assert code == 0 and out.startswith("usage: kubehpc sbatch")
