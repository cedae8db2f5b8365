"""Free TCP ports of this host for host-process Ray nodes (the embedded cluster).

All sockets of one request are held open together before any is closed, so the ports handed
out in one call are distinct; the kernel does not hand a just-closed ephemeral port out again
at once, which is what keeps two nodes created one after the other apart.
"""

from __future__ import annotations

import contextlib
import socket

from kubehpc.controllers.ray.startparams import NodePorts


def free_ports(count: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def node_ports(head: bool, serve: bool = False) -> NodePorts:
    n = 6 + (3 if head else 0) + (1 if serve else 0)
    p = free_ports(n)
    return NodePorts(
        node_manager=p[0],
        object_manager=p[1],
        metrics_export=p[2],
        dashboard_agent_listen=p[3],
        dashboard_agent_grpc=p[4],
        runtime_env_agent=p[5],
        gcs=p[6] if head else 0,
        dashboard=p[7] if head else 0,
        client=p[8] if head else 0,
        serve=p[-1] if serve else 0,
    )


def listening(port: int, timeout_s: float = 0.2) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``: how the embedded cluster
    tells a Ray node is up (KubeRay's readiness probe asks the raylet's health endpoint)."""
    if not port:
        return False
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s):
            return True
    except OSError:
        return False
