"""Node registration and heartbeat: the Node object and Lease the agent keeps for each node."""

from __future__ import annotations

import contextlib
import platform
from typing import Any

from kubehpc.api.cluster_config import NodeConfig
from kubehpc.api.errors import AlreadyExists, NotFound
from kubehpc.node.devices import DevicePlugin
from kubehpc.store.client import Client, PatchType

LEASE_NAMESPACE = "kube-node-lease"


def node_object(node: NodeConfig, plugin: DevicePlugin) -> dict[str, Any]:
    """The Node as registered: labels (incl. GPU Feature Discovery's), taints, inventory."""
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": {"x86_64": "amd64", "aarch64": "arm64"}.get(
            platform.machine(), platform.machine()
        ),
        **node.labels,
        **plugin.labels(),
    }
    spec: dict[str, Any] = {}
    if node.taints:
        spec["taints"] = [t.model_dump(exclude_defaults=True) | {"effect": t.effect} for t in node.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels, "annotations": plugin.annotations()},
        "spec": spec,
    }


def node_status(node: NodeConfig, plugin: DevicePlugin, host_ip: str, now: str, since: str) -> dict[str, Any]:
    """Node status: capacity = allocatable, conditions with Ready, addresses, nodeInfo."""
    capacity = {
        "cpu": f"{node.cpu_millis}m" if node.cpu_millis % 1000 else str(node.cpu_millis // 1000),
        "memory": f"{node.memory_bytes // 1024}Ki",
        "pods": str(node.pods),
        **plugin.capacity(),
    }
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubehpc node agent is posting ready status",
        "lastHeartbeatTime": now,
        "lastTransitionTime": since,
    }
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": [
            {
                "type": t,
                "status": "False",
                "reason": r,
                "lastHeartbeatTime": now,
                "lastTransitionTime": since,
            }
            for t, r in (
                ("MemoryPressure", "KubeletHasSufficientMemory"),
                ("DiskPressure", "KubeletHasNoDiskPressure"),
                ("PIDPressure", "KubeletHasSufficientPID"),
            )
        ]
        + [ready],
        "addresses": [
            {"type": "InternalIP", "address": host_ip},
            {"type": "Hostname", "address": node.name},
        ],
        "nodeInfo": {
            "architecture": platform.machine(),
            "operatingSystem": "linux",
            "kernelVersion": platform.release(),
            "osImage": platform.platform(),
            "containerRuntimeVersion": "kubehpc://host-process",
            "kubeletVersion": "v1.32.0-kubehpc",
            "kubeProxyVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def register(client: Client, node: NodeConfig, plugin: DevicePlugin, status: dict[str, Any]) -> None:
    """Create the Node, or merge our labels, annotations and spec into an existing one; then
    write its status."""
    obj = node_object(node, plugin)
    try:
        stored = client.create(obj)
    except AlreadyExists:
        stored = client.get("v1", "Node", node.name)
        stored["metadata"]["labels"] = {
            **(stored["metadata"].get("labels") or {}),
            **obj["metadata"]["labels"],
        }
        stored["metadata"]["annotations"] = {
            **(stored["metadata"].get("annotations") or {}),
            **obj["metadata"]["annotations"],
        }
        stored["spec"] = {**(stored.get("spec") or {}), **obj["spec"]}
        stored["metadata"].pop("resourceVersion", None)
        stored = client.update(stored)
    stored["status"] = status
    stored["metadata"].pop("resourceVersion", None)
    client.update_status(stored)


def renew_lease(client: Client, name: str, duration_s: int, now: str) -> None:
    """Renew (or create) the node's Lease in kube-node-lease."""
    spec = {
        "holderIdentity": name,
        "leaseDurationSeconds": duration_s,
        "renewTime": now,
    }
    try:
        client.patch(
            "coordination.k8s.io/v1", "Lease", name, {"spec": spec}, PatchType.MERGE, LEASE_NAMESPACE
        )
    except NotFound:
        with contextlib.suppress(AlreadyExists):
            client.create(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                    "spec": {**spec, "acquireTime": now},
                }
            )
