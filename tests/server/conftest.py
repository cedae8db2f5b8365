"""Fixtures for the HTTP API: an in-process server per test, and one `python -m kubehpc.server`
subprocess per session for the real kubectl and the official Python client."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from serverkit import REPO, TOKEN, ControlPlane, LiveServer

from kubehpc.api.kinds import default_registry
from kubehpc.server.serve import bind, make_server
from kubehpc.store.home import Home
from kubehpc.store.store import Store


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """The API server on an in-memory store, plain http on a free port, in a thread."""
    registry = default_registry()
    store = Store(registry, None)
    home = Home(tmp_path / "home").ensure()
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    ready = threading.Event()
    srv = make_server(store, registry, home, token=TOKEN, port=port, on_ready=lambda _: ready.set())

    def run() -> None:
        asyncio.run(srv.serve(sockets=[sock]))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "the server did not start"
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", store, home)
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()
        store.close()


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    home = tmp_path_factory.mktemp("kubehpc-home")
    log = open(home / "server.out", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "kubehpc.server", "--home", str(home)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    kubeconfig = home / "kubeconfig"
    deadline = time.monotonic() + 30
    url = ""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {(home / 'server.out').read_text()}")
        if kubeconfig.exists():
            url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            try:
                if httpx.get(url + "/readyz", verify=False, timeout=1).text == "ok":
                    break
            except httpx.HTTPError:
                pass
        time.sleep(0.05)
    else:
        raise AssertionError("the server did not become ready in 30 s")
    try:
        yield ControlPlane(home, kubeconfig, url, process)
    finally:
        process.terminate()
        process.wait(10)
        log.close()
