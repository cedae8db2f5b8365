"""The layout of $KUBEHPC_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubehpc.store.home import Home


def test_home_defaults_to_dot_kubehpc_in_the_user_home() -> None:
    assert Home.from_env({}).root == Path.home() / ".kubehpc"


def test_kubehpc_home_overrides_the_default(tmp_path: Path) -> None:
    assert Home.from_env({"KUBEHPC_HOME": str(tmp_path)}).root == tmp_path


def test_files_live_under_the_root(tmp_path: Path) -> None:
    home = Home(tmp_path)
    assert home.db_path == tmp_path / "store.db"
    assert home.kubeconfig_path == tmp_path / "kubeconfig"
    assert {home.token_path.parent, home.pid_path.parent, home.server_log_path.parent} == {tmp_path}


def test_pod_logs_are_per_namespace_pod_and_container(tmp_path: Path) -> None:
    assert Home(tmp_path).pod_log_path("team", "train-0", "main") == tmp_path / "logs/team/train-0/main.log"


def test_claim_directories_are_per_namespace(tmp_path: Path) -> None:
    assert Home(tmp_path).pvc_dir("team", "data") == tmp_path / "volumes/team/data"


@pytest.mark.parametrize("bad", ["..", "a/b", ""])
def test_path_segments_cannot_escape_the_home(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="path segment"):
        Home(tmp_path).pod_log_path("default", bad, "main")


def test_ensure_creates_a_private_directory(tmp_path: Path) -> None:
    home = Home(tmp_path / "new").ensure()
    assert home.root.is_dir()
    assert home.root.stat().st_mode & 0o077 == 0
