"""The real control plane for the ``k8s`` tests: built when missing, started once per session.

Building takes 15-20 minutes the first time (scripts/k8s-testenv build caches it outside the
repo); if it cannot be built or started the tests fail and say why — they never skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from k8skit import K8sEnv, Proc, cluster_config, running_testenv, wait_for

from kubehpc.kube.rest import RestClient


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.k8s)
            item.add_marker(pytest.mark.timeout(600))


@pytest.fixture(scope="session")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[K8sEnv]:
    with running_testenv(tmp_path_factory.mktemp("k8s"), "controller-manager") as env:
        yield env


@pytest.fixture(scope="session")
def api(k8s: K8sEnv) -> Iterator[RestClient]:
    with k8s.client() as client:
        yield client


@pytest.fixture(scope="session")
def nodes(k8s: K8sEnv, api: RestClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """``kubehpc node``: two virtual-kubelet nodes of 4 CPUs each (vk-0, vk-1)."""
    home = tmp_path_factory.mktemp("node-home")
    config = cluster_config(home / "cluster.yaml", "vk", 2, "4")
    proc = Proc(
        ["node", "--kubeconfig", str(k8s.kubeconfig), "--cluster", str(config), "--home", str(home / "h")],
        home / "node.log",
    ).start()

    def ready() -> bool:
        assert proc.alive(), f"kubehpc node exited:\n{proc.output()}"
        names = {n["metadata"]["name"] for n in api.list("v1", "Node").items}
        return {"vk-0", "vk-1"} <= names

    wait_for("the virtual-kubelet nodes to register", ready, timeout=90)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def controller(k8s: K8sEnv, api: RestClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """``kubehpc controller`` (scheduler + Kueue admission), its CRDs installed."""
    logs = tmp_path_factory.mktemp("controller")
    proc = Proc(
        ["controller", "--kubeconfig", str(k8s.kubeconfig), "--identity", "first"], logs / "controller.log"
    ).start()

    def leading() -> bool:
        assert proc.alive(), f"kubehpc controller exited:\n{proc.output()}"
        leases = api.list("coordination.k8s.io/v1", "Lease").items
        return any((lease.get("spec") or {}).get("holderIdentity") == "first" for lease in leases)

    wait_for("kubehpc controller to take the lease", leading, timeout=120)
    try:
        yield proc
    finally:
        proc.stop()
