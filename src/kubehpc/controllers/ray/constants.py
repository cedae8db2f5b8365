"""Names and labels as KubeRay sets them (ray-operator/controllers/ray/utils/constant.go)."""

from __future__ import annotations

API_VERSION = "ray.io/v1"
CLUSTER_KIND = "RayCluster"
JOB_KIND = "RayJob"
SERVICE_KIND = "RayService"

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"  # head | worker
GROUP_LABEL = "ray.io/group"
IDENTIFIER_LABEL = "ray.io/identifier"
IS_HEAD_LABEL = "ray.io/is-ray-node"
ORIGINATED_FROM_CRD_LABEL = "ray.io/originated-from-crd"
ORIGINATED_FROM_CR_NAME_LABEL = "ray.io/originated-from-cr-name"
HEAD_GROUP = "headgroup"
COMPONENT_LABEL = "app.kubernetes.io/component"
CREATED_BY_LABEL = "app.kubernetes.io/created-by"
MANAGER = "kuberay-operator"

# The Ray container is the first container of each template, as in KubeRay.
RAY_CONTAINER_INDEX = 0

# Default ports of the head node (KubeRay's DefaultGcsServerPort and friends).
GCS_PORT = 6379
DASHBOARD_PORT = 8265
CLIENT_PORT = 10001
METRICS_PORT = 8080
SERVE_PORT = 8000

# Where the embedded cluster records the ports it gave a host-process Ray node.
PORTS_ANNOTATION = "kubehpc.io/ray-ports"

# RayCluster status.state values (KubeRay's ClusterState).
READY = "ready"
SUSPENDED = "suspended"
FAILED = "failed"
