"""Shell metacharacters in user values stay characters: nothing the user typed as a name, a
pattern, an exported value or an argument runs as a command, in the pod or on the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from podkit import run_pod
from slurmkit import env, script, submit

HOSTILE = [
    "$(touch PWNED)",
    "`touch PWNED`",
    "a;touch PWNED",
    "a && touch PWNED",
    "a|touch PWNED",
    "$(HOME)",
    "${HOME}",
    "x'\"y",
    "a\\nb",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_job_name_is_only_a_name(tmp_path: Path, value: str) -> None:
    objs = submit(script(f"-D {tmp_path}", "-o out", body='printf "%s" "$SLURM_JOB_NAME"'), "-J", value)
    assert env(objs)["SLURM_JOB_NAME"] == value
    assert run_pod(objs, tmp_path).returncode == 0
    assert (tmp_path / "out").read_text() == value
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize("value", [v for v in HOSTILE if "/" not in v and "\\" not in v])
def test_a_hostile_output_pattern_is_only_a_file_name(tmp_path: Path, value: str) -> None:
    objs = submit(script(f"-D {tmp_path}", body="echo hi"), "-o", value + "-%j")
    assert run_pod(objs, tmp_path).returncode == 0
    assert (tmp_path / (value + "-100")).read_text() == "hi\n"
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_exported_value_is_only_a_value(tmp_path: Path, value: str) -> None:
    objs = submit(
        script(f"-D {tmp_path}", "-o out", body='printf "%s" "$EVIL"'), env={"EVIL": value, "HOME": "/h"}
    )
    assert run_pod(objs, tmp_path).returncode == 0
    assert (tmp_path / "out").read_text() == value
    assert not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_script_argument_is_only_an_argument(tmp_path: Path, value: str) -> None:
    objs = submit(script(f"-D {tmp_path}", "-o out", body='printf "%s" "$1"'), args=(value,))
    assert run_pod(objs, tmp_path).returncode == 0
    assert (tmp_path / "out").read_text() == value
    assert not list(tmp_path.rglob("PWNED"))


def test_a_hostile_working_directory_is_only_a_path(tmp_path: Path) -> None:
    odd = tmp_path / "$(touch PWNED)"
    objs = submit(script("-o out", body="pwd"), "-D", str(odd))
    assert run_pod(objs, tmp_path).returncode == 0
    assert (odd / "out").read_text() == f"{odd}\n"
    assert not list(tmp_path.rglob("PWNED"))
