"""``scripts/pick-python.sh``: the interpreter ``make`` builds .venv on is the system's python3
when it can build the project (Python >= 3.11, venv, C headers), else python3 from PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "pick-python.sh"


def pick(candidates: list[str] | None = None) -> str:
    """What the script prints, preferring ``candidates`` (None: its own default list)."""
    env = {k: v for k, v in os.environ.items() if k != "PICK_PYTHON_CANDIDATES"}
    if candidates is not None:
        env["PICK_PYTHON_CANDIDATES"] = " ".join(candidates)
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def unusable(tmp_path: Path, name: str) -> str:
    """An executable that fails whatever it is asked, as a Python without venv or headers does."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\nexit 1\n")
    path.chmod(0o755)
    return str(path)


def test_a_usable_preferred_interpreter_is_picked() -> None:
    assert pick([sys.executable]) == sys.executable


def test_an_interpreter_that_cannot_build_the_project_is_passed_over(tmp_path: Path) -> None:
    assert pick([unusable(tmp_path, "python3"), sys.executable]) == sys.executable


def test_a_missing_interpreter_is_passed_over(tmp_path: Path) -> None:
    assert pick([str(tmp_path / "no-such-python"), sys.executable]) == sys.executable


def test_without_a_usable_preferred_interpreter_python3_from_path_is_picked(tmp_path: Path) -> None:
    assert pick([unusable(tmp_path, "python3")]) == "python3"


def test_by_default_the_system_python3_is_preferred_where_it_can_build_the_project() -> None:
    # Usable or not, the system's python3 is judged as any preferred candidate is (above).
    assert pick() == pick(["/usr/bin/python3"])


def venv_note(python: str) -> str:
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "venv-note", f"PYTHON={python}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_make_says_when_the_venv_runs_on_another_interpreter_than_it_would_pick(tmp_path: Path) -> None:
    other = tmp_path / "python3"
    other.write_text("#!/bin/sh\necho /elsewhere/bin/python3.11\n")  # what `sys.executable` says
    other.chmod(0o755)
    note = venv_note(str(other))
    assert "/elsewhere/bin/python3.11" in note and "make clean" in note


def test_make_says_nothing_when_the_venv_runs_on_the_interpreter_it_would_pick() -> None:
    base = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", "import sys; print(sys._base_executable)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert venv_note(base) == ""
