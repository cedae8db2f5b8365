"""The container command of a Ray node, in the shape KubeRay generates it.

KubeRay turns ``rayStartParams`` plus the Ray container's resources into
``ulimit -n 65536; ray start --head --block --dashboard-host=0.0.0.0 --num-cpus=1 ...`` run by
``/bin/bash -lc --``. Resources become Ray resources as there: ``num-cpus`` from the CPU
limit (else request), ``memory`` from the memory limit (else request), ``num-gpus`` from the
``nvidia.com/gpu`` limit. A parameter the user set always wins.

On the embedded cluster all Ray nodes share the host's network, so each node also gets its
own ports (:class:`NodePorts`) and temp dir; in a real cluster each pod has its own IP and the
defaults are kept.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kubehpc.api.quantity import parse_quantity
from kubehpc.controllers.ray import constants as c

GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class NodePorts:
    """Ports one host-process Ray node listens on; head-only ones are 0 on workers."""

    node_manager: int
    object_manager: int
    metrics_export: int
    dashboard_agent_listen: int
    dashboard_agent_grpc: int
    runtime_env_agent: int
    gcs: int = 0
    dashboard: int = 0
    client: int = 0
    serve: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> NodePorts:
        return cls(**json.loads(text))

    def start_params(self) -> dict[str, str]:
        params = {
            "node-manager-port": self.node_manager,
            "object-manager-port": self.object_manager,
            "metrics-export-port": self.metrics_export,
            "dashboard-agent-listen-port": self.dashboard_agent_listen,
            "dashboard-agent-grpc-port": self.dashboard_agent_grpc,
            "runtime-env-agent-port": self.runtime_env_agent,
            "port": self.gcs,
            "dashboard-port": self.dashboard,
            "ray-client-server-port": self.client,
        }
        return {k: str(v) for k, v in params.items() if v}


def _resources(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    res = container.get("resources") or {}
    return dict(res.get("limits") or {}), dict(res.get("requests") or {})


def resource_params(container: Mapping[str, Any]) -> dict[str, str]:
    """num-cpus, memory and num-gpus of a Ray container, as KubeRay derives them."""
    limits, requests = _resources(container)
    params: dict[str, str] = {}
    cpu = limits.get("cpu", requests.get("cpu"))
    if cpu is not None:
        # Ray wants a whole number of CPUs; KubeRay rounds a fractional quantity up.
        params["num-cpus"] = str(max(0, math.ceil(parse_quantity(cpu).amount)))
    memory = limits.get("memory", requests.get("memory"))
    if memory is not None:
        params["memory"] = str(parse_quantity(memory).value())
    gpus = limits.get(GPU_RESOURCE, requests.get(GPU_RESOURCE))
    if gpus is not None:
        params["num-gpus"] = str(parse_quantity(gpus).value())
    return params


def _flag(key: str, value: str) -> str:
    # KubeRay writes boolean flags as bare switches ("block: true" -> --block).
    if value.lower() == "true" and key in ("block", "head", "disable-usage-stats"):
        return f"--{key}"
    return f"--{key}={shlex.quote(value)}"


def ray_start_command(
    *,
    head: bool,
    start_params: Mapping[str, str],
    container: Mapping[str, Any],
    head_address: str = "",
    ports: NodePorts | None = None,
    temp_dir: str = "",
    ray_bin: str = "ray",
) -> str:
    """The shell line KubeRay puts in the Ray container's args."""
    params: dict[str, str] = {}
    if head:
        params["dashboard-host"] = "0.0.0.0"
        params["metrics-export-port"] = str(c.METRICS_PORT)
    else:
        params["address"] = head_address
        params["metrics-export-port"] = str(c.METRICS_PORT)
    params.update(resource_params(container))
    if ports is not None:
        params.update(ports.start_params())
        params["disable-usage-stats"] = "true"
    if temp_dir:
        params["temp-dir"] = temp_dir
    params.update({k: str(v) for k, v in start_params.items()})
    words = [shlex.quote(ray_bin), "start"]
    if head:
        words.append("--head")
    words.append("--block")
    words += [_flag(k, v) for k, v in params.items() if k not in ("head", "block")]
    # An unprivileged host process may not raise its hard limit: it takes what it may have.
    ulimit = (
        "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn)" if ports is not None else "ulimit -n 65536"
    )
    return f"{ulimit}; " + " ".join(words)


def ray_resources_of(start_params: Mapping[str, str], container: Mapping[str, Any]) -> dict[str, float]:
    """The Ray resources one node of a group offers (what the autoscaler packs demand into)."""
    params = {**resource_params(container), **start_params}
    out: dict[str, float] = {}
    if "num-cpus" in params:
        out["CPU"] = float(params["num-cpus"])
    if "num-gpus" in params:
        out["GPU"] = float(params["num-gpus"])
    if "memory" in params:
        out["memory"] = float(params["memory"])
    custom = params.get("resources")
    if custom:
        try:
            out.update({str(k): float(v) for k, v in json.loads(custom).items()})
        except (ValueError, AttributeError):
            pass
    return out
