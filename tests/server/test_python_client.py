"""The official `kubernetes` Python client against `python -m kubehpc.server`."""

from __future__ import annotations

import pytest
from kubernetes import client, config, watch
from serverkit import ControlPlane


@pytest.fixture
def core(control_plane: ControlPlane) -> client.CoreV1Api:
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    return client.CoreV1Api(api)


def new_pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"from": "python"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox")]),
    )


def test_python_client_creates_lists_and_patches(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", new_pod("py-a"))
    assert created.metadata.uid
    names = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector="from=python").items]
    assert "py-a" in names
    patched = core.patch_namespaced_pod("py-a", "default", {"metadata": {"labels": {"patched": "yes"}}})
    assert patched.metadata.labels["patched"] == "yes"


def test_python_client_watches(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", new_pod("py-w1"))
    core.create_namespaced_pod("default", new_pod("py-w2"))
    seen = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", "py-w1"), ("ADDED", "py-w2")]
