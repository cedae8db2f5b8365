"""``kubehpc up -d`` / ``down``: one daemon per home, found by its pidfile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import run_subprocess

from kubehpc.cli.daemon import process_alive, running_pid
from kubehpc.store.home import Home


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    home = Home(tmp_path / "home")
    yield home
    run_subprocess(home.root, "down")


def test_up_detached_writes_a_pidfile_and_kubeconfig_and_prints_its_path(home: Home) -> None:
    result = run_subprocess(home.root, "up", "-d", "--port", "0")
    assert result.code == 0, result.err
    assert home.pid_path.read_text().strip() == str(running_pid(home))
    assert f"export KUBECONFIG={home.kubeconfig_path}" in result.out
    assert "server: https://127.0.0.1:" in home.kubeconfig_path.read_text()


def test_second_up_says_already_running_and_exits_zero(home: Home) -> None:
    assert run_subprocess(home.root, "up", "-d", "--port", "0").code == 0
    again = run_subprocess(home.root, "up", "-d", "--port", "0")
    assert again.code == 0
    assert "already running" in again.out


def test_down_stops_the_daemon_and_removes_the_pidfile(home: Home) -> None:
    assert run_subprocess(home.root, "up", "-d", "--port", "0").code == 0
    pid = running_pid(home)
    assert pid is not None
    stopped = run_subprocess(home.root, "down")
    assert stopped.code == 0
    assert f"stopped (pid {pid})" in stopped.out
    assert not home.pid_path.exists()
    assert not process_alive(pid)


def test_down_with_nothing_running_says_so(home: Home) -> None:
    result = run_subprocess(home.root, "down")
    assert result.code == 0
    assert "no kubehpc control plane is running" in result.out


def test_verbs_without_a_control_plane_say_how_to_start_one(home: Home) -> None:
    result = run_subprocess(home.root, "get", "pods")
    assert result.code == 1
    assert "kubehpc up -d" in result.err
    assert "Traceback" not in result.err


def test_up_rejects_a_bad_cluster_file_naming_the_field(home: Home, tmp_path: Path) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(
        "apiVersion: kubehpc.io/v1alpha1\nkind: ClusterConfig\nmetadata: {name: x}\nspec: {bogus: 1}\n"
    )
    result = run_subprocess(home.root, "up", "-d", "--cluster", str(bad))
    assert result.code == 1
    assert "bogus" in result.err
    assert running_pid(home) is None


def test_up_rejects_a_kueue_configuration_it_cannot_carry_out_naming_the_field(
    home: Home, tmp_path: Path
) -> None:
    bad = tmp_path / "kueue.yaml"
    bad.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nwaitForPodsReady: {enable: true}\n"
    )
    result = run_subprocess(home.root, "up", "-d", "--kueue-config", str(bad))
    assert result.code == 1
    assert f"--kueue-config {bad}: document 1: waitForPodsReady is not supported" in result.err
    assert running_pid(home) is None
    assert not home.kueue_config_path.exists()
