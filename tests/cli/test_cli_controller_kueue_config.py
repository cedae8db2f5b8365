"""``kubehpc controller --kueue-config FILE``: Kueue's Configuration turns fair sharing on for the
admission loop in cluster mode too; a setting kubehpc does not carry out stops it at start."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from kubehpc.cli.controller import options
from kubehpc.cli.main import build_parser, main

CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing:
  enable: true
"""


def parsed(*argv: str) -> argparse.Namespace:
    words = ["controller", "--kubeconfig", "/nonexistent", *argv]
    return build_parser(words).parse_args(words)


def test_the_configurations_fair_sharing_reaches_the_cluster_admission_loop(tmp_path: Path) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(CONFIG)
    config = options(parsed("--kueue-config", str(path))).kueue_config
    assert config is not None and config.fair_sharing is True


def test_without_a_configuration_the_admission_loop_keeps_kueues_defaults() -> None:
    assert options(parsed()).kueue_config is None


def test_a_setting_not_carried_out_stops_the_controller_before_it_connects(tmp_path: Path) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(CONFIG + "waitForPodsReady: {enable: true}\n")
    err = io.StringIO()
    argv = ["controller", "--kubeconfig", "/nonexistent", "--kueue-config", str(path)]
    assert main(argv, stdout=io.StringIO(), stderr=err) == 1
    assert f"--kueue-config {path}: document 1: waitForPodsReady is not supported" in err.getvalue()
