"""Which server the CLI talks to, and what it says when it cannot."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest
from cli_harness import run_subprocess

from kubehpc.cli.main import main
from kubehpc.store.home import Home


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_kubeconfig_flag_names_the_server(
    control_plane: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    copy = tmp_path / "elsewhere.yaml"
    copy.write_text(control_plane.kubeconfig_path.read_text())
    # An empty home: only the flag can lead to the running server.
    code, out, _ = run("--home", str(tmp_path / "empty"), "--kubeconfig", str(copy), "get", "namespaces")
    assert code == 0
    assert out.splitlines()[0].split()[0] == "NAME"


def test_an_unreachable_server_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    config = tmp_path / "config"
    config.write_text(
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"
    )
    code, _, err = run("--kubeconfig", str(config), "get", "pods")
    assert code == 1
    assert err.startswith(f"error: cannot reach the API server at http://127.0.0.1:{port}")
    assert len(err.splitlines()) == 1


def test_a_missing_kubeconfig_file_is_one_error_line(tmp_path: Path) -> None:
    code, _, err = run("--kubeconfig", str(tmp_path / "nope"), "get", "pods")
    assert code == 1
    assert err == f"error: kubeconfig {tmp_path / 'nope'} does not exist\n"


def test_version_prints_client_and_server_versions(
    control_plane: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    code, out, _ = run("--home", str(control_plane.root), "version")
    assert code == 0
    assert out.startswith("Client Version: kubehpc ")
    assert "Server Version: v" in out


def test_up_on_a_busy_port_is_refused_naming_the_port(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_subprocess(tmp_path / "home", "up", "-d", "--port", str(port))
    assert result.code == 1
    assert result.err.startswith(f"error: port {port} on 127.0.0.1 is already in use")
    assert "Traceback" not in result.err


def test_global_flags_may_follow_the_verb(control_plane: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    code, out, _ = run("get", "namespaces", "--home", str(control_plane.root), "-n", "kube-system")
    assert code == 0
    assert "default" in out.split()
