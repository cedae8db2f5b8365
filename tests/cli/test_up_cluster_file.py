"""``kubehpc up --cluster FILE`` keeps a copy of the cluster file in the home."""

from __future__ import annotations

import shutil
from pathlib import Path

from kubehpc.cli.up import _keep_cluster_file, _keep_kueue_config
from kubehpc.store.home import Home

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clusters" / "a100-2racks.yaml"


def test_the_cluster_file_is_copied_into_the_home(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    _keep_cluster_file(home, str(EXAMPLE))
    assert home.cluster_path.read_bytes() == EXAMPLE.read_bytes()


def test_naming_the_homes_own_cluster_file_keeps_it_as_it_is(tmp_path: Path) -> None:
    home = Home(tmp_path / "home").ensure()
    shutil.copyfile(EXAMPLE, home.cluster_path)
    _keep_cluster_file(home, str(home.cluster_path))
    assert home.cluster_path.read_bytes() == EXAMPLE.read_bytes()


def test_the_kueue_configuration_is_checked_and_copied_into_the_home(tmp_path: Path) -> None:
    config = tmp_path / "kueue.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nfairSharing: {enable: true}\n"
    )
    home = Home(tmp_path / "home")
    _keep_kueue_config(home, str(config))
    assert home.kueue_config_path.read_bytes() == config.read_bytes()
