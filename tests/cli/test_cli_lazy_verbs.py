"""The CLI imports a verb's module only when that verb runs (``kubehpc.cli.main.VERBS``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from kubehpc.cli.main import VERBS, build_parser, main, verb_of

CHECK = """
import json, sys
from kubehpc.cli.main import build_parser
args = build_parser(sys.argv[1:]).parse_args(sys.argv[1:])
print(json.dumps({"command": args.command,
                  "verbs": sorted(m for m in sys.modules if m.startswith("kubehpc.cli."))}))
"""


def imported_after_parsing(*argv: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, *argv], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(done.stdout)
    return seen["command"], set(seen["verbs"])


def test_running_one_verb_imports_only_that_verbs_module() -> None:
    command, modules = imported_after_parsing(
        "--kubeconfig", "k.yaml", "controller", "--components", "scheduler"
    )
    assert command == "controller"
    assert "kubehpc.cli.controller" in modules
    others = {f"kubehpc.cli.{m}" for m in VERBS.values()} - {"kubehpc.cli.controller"}
    # session and daemon are shared by every verb; the other verbs' modules stay out.
    assert not modules & others, sorted(modules & others)


def test_a_module_with_several_verbs_is_found_by_each_of_them() -> None:
    command, modules = imported_after_parsing("scancel", "12")
    assert command == "scancel"
    assert "kubehpc.cli.slurm_views" in modules
    assert "kubehpc.cli.sim" not in modules


def test_the_full_parser_offers_exactly_the_verbs_of_the_table() -> None:
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(verbs.choices) == list(VERBS)


def test_the_verb_is_found_past_the_shared_flags_and_their_values() -> None:
    assert verb_of(["--kubeconfig", "get", "-n", "apply", "describe", "pod"]) == "describe"
    assert verb_of(["--context=c", "-nns", "--home", "/h", "get"]) == "get"
    assert verb_of(["--kube", "sim", "apply", "-f", "x"]) == "apply"  # argparse's abbreviation
    assert verb_of(["--help"]) is None
    assert verb_of(["-h", "get"]) is None  # the top-level help: every verb listed
    assert verb_of([]) is None


def test_help_without_a_verb_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for verb in VERBS:
        assert verb in out


def test_an_unknown_verb_is_refused_with_every_verb_as_a_choice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    err = capsys.readouterr().err
    assert "invalid choice: 'frobnicate'" in err
    assert "'controller'" in err and "'squeue'" in err
