"""`python -m kubehpc.server`: first-start files, TLS, and a clean stop on SIGTERM."""

from __future__ import annotations

import signal
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml
from serverkit import REPO

from kubehpc.server.bootstrap import ensure_token
from kubehpc.store.home import Home


def start(home: Path) -> tuple[subprocess.Popen[bytes], dict]:
    (home / "kubeconfig").unlink(missing_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "kubehpc.server", "--home", str(home)], cwd=REPO)
    deadline = time.monotonic() + 30
    while not (home / "kubeconfig").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    return process, yaml.safe_load((home / "kubeconfig").read_text())


def test_token_is_made_once_and_private(tmp_path: Path) -> None:
    home = Home(tmp_path)
    token = ensure_token(home)
    assert ensure_token(home) == token and len(token) >= 32
    assert stat.S_IMODE(home.token_path.stat().st_mode) == 0o600


def test_server_writes_a_tls_kubeconfig_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    process, config = start(tmp_path)
    try:
        url = config["clusters"][0]["cluster"]["server"]
        assert url.startswith("https://127.0.0.1:")
        assert stat.S_IMODE((tmp_path / "kubeconfig").stat().st_mode) == 0o600
        ca = ssl.create_default_context(cadata=(tmp_path / "pki" / "ca.crt").read_text())
        token = config["users"][0]["user"]["token"]
        with httpx.Client(base_url=url, verify=ca, headers={"Authorization": f"Bearer {token}"}) as client:
            assert client.get("/api/v1/namespaces").status_code == 200
            # An open watch must not hold up the shutdown.
            with client.stream("GET", "/api/v1/pods", params={"watch": "1"}):
                process.send_signal(signal.SIGTERM)
                assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_restart_keeps_the_token(tmp_path: Path) -> None:
    process, first = start(tmp_path)
    process.send_signal(signal.SIGTERM)
    process.wait(15)
    process, second = start(tmp_path)
    process.send_signal(signal.SIGTERM)
    process.wait(15)
    assert first["users"][0]["user"]["token"] == second["users"][0]["user"]["token"]
