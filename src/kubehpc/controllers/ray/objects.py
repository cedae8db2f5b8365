"""The Kubernetes objects a RayCluster is made of, named and labelled as KubeRay makes them:
the head pod ``<cluster>-head-<suffix>``, worker pods ``<cluster>-<group>-worker-<suffix>`` and
the head Service ``<cluster>-head-svc``. Pure functions of the cluster and the node's ports.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray.startparams import NodePorts, ray_start_command

Obj = dict[str, Any]
HOST_GRACE_PERIOD_S = 3


@dataclass(frozen=True)
class HostMode:
    """How Ray nodes run. ``host_processes``: pods are processes of one host (the embedded
    cluster), so every node gets its own ports and temp dir and reaches the head on loopback;
    otherwise each pod has its own IP and KubeRay's defaults apply. ``ray_bin`` is the ``ray``
    executable the generated command calls."""

    host_processes: bool = False
    ray_bin: str = "ray"
    temp_root: str = "/tmp/kuberay"
    path: str = ""
    """PATH of Ray containers on the host: the environment with Ray first, so ``ray`` and the
    ``python`` of a job's entrypoint are the ones Ray is installed in ("" keeps the node's)."""

    def env(self) -> list[Obj]:
        """What every Ray process of the embedded cluster gets: Ray's environment first on
        PATH, and Ray's token authentication off. (Ray turns it on by itself when it finds a
        token under the user's ~/.ray: on a shared host that stray file would make one node
        demand a token its peers do not send.)"""
        if not self.host_processes:
            return []
        env = [{"name": "RAY_AUTH_MODE", "value": "disabled"}]
        if self.path:
            env.append({"name": "PATH", "value": self.path})
        return env


def meta(obj: Mapping[str, Any]) -> Obj:
    return dict(obj.get("metadata") or {})


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    m = meta(owner)
    return {
        "apiVersion": owner.get("apiVersion", c.API_VERSION),
        "kind": owner.get("kind"),
        "name": m.get("name"),
        "uid": m.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def head_service_name(cluster_name: str) -> str:
    return f"{cluster_name}-head-svc"


def head_address(cluster: Mapping[str, Any], head_ports: NodePorts | None) -> str:
    """The GCS address workers and drivers use."""
    m = meta(cluster)
    if head_ports is not None:
        return f"127.0.0.1:{head_ports.gcs}"
    return f"{head_service_name(m['name'])}.{m.get('namespace', 'default')}.svc.cluster.local:{c.GCS_PORT}"


def dashboard_address(cluster: Mapping[str, Any], head_ports: NodePorts | None) -> str:
    m = meta(cluster)
    if head_ports is not None:
        return f"127.0.0.1:{head_ports.dashboard}"
    return (
        f"{head_service_name(m['name'])}.{m.get('namespace', 'default')}.svc.cluster.local:{c.DASHBOARD_PORT}"
    )


def node_labels(cluster_name: str, node_type: str, group: str) -> dict[str, str]:
    return {
        c.CLUSTER_LABEL: cluster_name,
        c.NODE_TYPE_LABEL: node_type,
        c.GROUP_LABEL: group,
        c.IDENTIFIER_LABEL: f"{cluster_name}-{node_type}",
        c.IS_HEAD_LABEL: "yes",
        "app.kubernetes.io/name": "kuberay",
        c.CREATED_BY_LABEL: c.MANAGER,
    }


def _env(container: Obj, extra: list[Obj]) -> None:
    names = {e.get("name") for e in container.get("env") or ()}
    container["env"] = list(container.get("env") or []) + [e for e in extra if e["name"] not in names]


def _node_pod(
    cluster: Mapping[str, Any],
    template: Mapping[str, Any],
    *,
    name: str,
    node_type: str,
    group: str,
    start_params: Mapping[str, str],
    head_ports: NodePorts | None,
    own_ports: NodePorts | None,
    mode: HostMode,
) -> Obj:
    m = meta(cluster)
    cluster_name = str(m["name"])
    namespace = str(m.get("namespace") or "default")
    tmpl = copy.deepcopy(dict(template))
    tmeta = dict(tmpl.get("metadata") or {})
    spec = dict(tmpl.get("spec") or {})
    labels = {**(tmeta.get("labels") or {}), **node_labels(cluster_name, node_type, group)}
    annotations = dict(tmeta.get("annotations") or {})
    if own_ports is not None:
        annotations[c.PORTS_ANNOTATION] = own_ports.to_json()
    containers = [dict(x) for x in spec.get("containers") or []]
    if not containers:
        raise ValueError(f"RayCluster {cluster_name}: the {group} template has no container")
    ray = containers[c.RAY_CONTAINER_INDEX]
    head = node_type == "head"
    address = head_address(cluster, head_ports)
    # Short: Ray puts unix sockets under it, and their paths may not pass 107 bytes.
    temp_dir = f"{mode.temp_root}/{str(m.get('uid', ''))[:8]}-{name[-5:]}" if mode.host_processes else ""
    command = ray_start_command(
        head=head,
        start_params=start_params,
        container=ray,
        head_address=address,
        ports=own_ports,
        temp_dir=temp_dir,
        ray_bin=mode.ray_bin,
    )
    if not ray.get("command") and not ray.get("args"):
        # KubeRay runs a login shell (-lc) so the image's profile sets PATH; on the host a
        # login shell would reset the PATH that puts Ray's environment first.
        ray["command"] = ["/bin/bash", "-c" if mode.host_processes else "-lc", "--"]
        ray["args"] = [command]
    env: list[Obj] = [
        {"name": "RAY_CLUSTER_NAME", "value": cluster_name},
        {"name": "RAY_CLOUD_INSTANCE_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RAY_NODE_TYPE_NAME", "value": group},
        {"name": "KUBERAY_GEN_RAY_START_CMD", "value": command},
        {"name": "RAY_ADDRESS", "value": "127.0.0.1:" + address.rsplit(":", 1)[1] if head else address},
        {"name": "RAY_PORT", "value": address.rsplit(":", 1)[1]},
        {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
    ]
    if not head:
        env.append({"name": "FQ_RAY_IP", "value": address.rsplit(":", 1)[0]})
    if mode.host_processes:
        env.append({"name": "RAY_USAGE_STATS_ENABLED", "value": "0"})
        env += mode.env()
    _env(ray, env)
    containers[c.RAY_CONTAINER_INDEX] = ray
    spec["containers"] = containers
    spec.setdefault("restartPolicy", "Always")
    if mode.host_processes:
        # SIGTERM reaches every process of the node at once here (no container boundary), and
        # Ray's autoscaler monitor then hangs its `ray start` until the grace period ends;
        # a Ray node has nothing to save, so a short grace period stops it promptly.
        spec.setdefault("terminationGracePeriodSeconds", HOST_GRACE_PERIOD_S)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": spec,
    }


def head_pod(cluster: Mapping[str, Any], name: str, ports: NodePorts | None, mode: HostMode) -> Obj:
    head = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    return _node_pod(
        cluster,
        head.get("template") or {},
        name=name,
        node_type="head",
        group=c.HEAD_GROUP,
        start_params=head.get("rayStartParams") or {},
        head_ports=ports,
        own_ports=ports,
        mode=mode,
    )


def worker_pod(
    cluster: Mapping[str, Any],
    group: Mapping[str, Any],
    name: str,
    head_ports: NodePorts | None,
    ports: NodePorts | None,
    mode: HostMode,
) -> Obj:
    return _node_pod(
        cluster,
        group.get("template") or {},
        name=name,
        node_type="worker",
        group=str(group["groupName"]),
        start_params=group.get("rayStartParams") or {},
        head_ports=head_ports,
        own_ports=ports,
        mode=mode,
    )


def head_service(cluster: Mapping[str, Any], ports: NodePorts | None) -> Obj:
    m = meta(cluster)
    name = str(m["name"])
    spec = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    numbers = {
        "gcs-server": ports.gcs if ports else c.GCS_PORT,
        "dashboard": ports.dashboard if ports else c.DASHBOARD_PORT,
        "client": ports.client if ports else c.CLIENT_PORT,
        "metrics": ports.metrics_export if ports else c.METRICS_PORT,
        "serve": ports.serve if ports and ports.serve else c.SERVE_PORT,
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": head_service_name(name),
            "namespace": m.get("namespace", "default"),
            "labels": {
                c.CLUSTER_LABEL: name,
                c.NODE_TYPE_LABEL: "head",
                c.IDENTIFIER_LABEL: f"{name}-head",
                "app.kubernetes.io/name": "kuberay",
                c.CREATED_BY_LABEL: c.MANAGER,
            },
            "annotations": dict((cluster.get("spec") or {}).get("headServiceAnnotations") or {}),
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": {
            "type": spec.get("serviceType") or "ClusterIP",
            "selector": {c.CLUSTER_LABEL: name, c.NODE_TYPE_LABEL: "head"},
            "ports": [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in numbers.items()],
        },
    }


def endpoints_of(ports: NodePorts | None) -> dict[str, str]:
    """status.endpoints: the head's named ports, as strings (as KubeRay reports them)."""
    if ports is None:
        numbers = {
            "gcs-server": c.GCS_PORT,
            "dashboard": c.DASHBOARD_PORT,
            "client": c.CLIENT_PORT,
            "metrics": c.METRICS_PORT,
            "serve": c.SERVE_PORT,
        }
    else:
        numbers = {
            "gcs-server": ports.gcs,
            "dashboard": ports.dashboard,
            "client": ports.client,
            "metrics": ports.metrics_export,
        }
        if ports.serve:
            numbers["serve"] = ports.serve
    return {k: str(v) for k, v in numbers.items()}
