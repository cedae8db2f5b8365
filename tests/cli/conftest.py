"""A control plane started the way users start it (``kubehpc up -d``), and a runner for verbs.

Verbs run in-process through ``main()`` with captured output: the same code path as the
installed command, talking HTTP to the daemon. ``up``, ``down`` and the start-on-demand of
``apply`` run as real subprocesses, since starting and stopping processes is what they test.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Iterator

import pytest
from cli_harness import Kubehpc, Result, run_subprocess

from kubehpc.cli.main import main
from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    home = Home(tmp_path_factory.mktemp("kubehpc-home"))
    started = run_subprocess(home.root, "up", "-d", "--port", "0")
    assert started.code == 0, started.err
    yield home
    run_subprocess(home.root, "down")


@pytest.fixture
def api(control_plane: Home) -> Iterator[RestClient]:
    """A client of the control plane, for setting up and checking state behind the CLI's back."""
    with RestClient(load_client_config(str(control_plane.kubeconfig_path))) as client:
        yield client


_namespaces = itertools.count()


@pytest.fixture
def namespace(api: RestClient) -> str:
    """A fresh namespace per test, so tests do not see each other's objects."""
    name = f"t{os.getpid()}-{next(_namespaces)}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def kubehpc(control_plane: Home, namespace: str, monkeypatch: pytest.MonkeyPatch) -> Kubehpc:
    """Run a verb against the shared control plane in the test's namespace."""
    monkeypatch.delenv("KUBECONFIG", raising=False)

    def run(*args: str, stdin: str = "") -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--home", str(control_plane.root), "-n", namespace, *args],
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
        )
        return Result(code, out.getvalue(), err.getvalue())

    return run
