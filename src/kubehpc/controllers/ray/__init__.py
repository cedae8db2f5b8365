"""KubeRay's controllers: RayCluster, RayJob and RayService (ray.io/v1).

:func:`embedded_controllers` wires them for the embedded cluster, where pods are processes of
this host: Ray nodes get their own ports and temp dirs, and the generated ``ray start`` calls
the ``ray`` executable installed beside this Python.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kubehpc.controllers.ray.cluster import RayClusterController, RayClusterOptions
from kubehpc.controllers.ray.objects import HostMode
from kubehpc.controllers.ray.rayjob import RayJobController
from kubehpc.controllers.ray.rayservice import RayServiceController
from kubehpc.store.client import Client

Loop = Callable[[threading.Event], None]


def embedded_mode() -> HostMode:
    """Ray containers find ``ray`` (and ``python``) of this Python's environment first."""
    here = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", os.defpath)
    return HostMode(
        host_processes=True, ray_bin="ray", path=f"{here}:{path}" if here not in path.split(":") else path
    )


def embedded_controllers(client: Client, mode: HostMode | None = None) -> dict[str, Loop]:
    mode = mode or embedded_mode()
    return {
        "raycluster": RayClusterController(client, RayClusterOptions(mode=mode)).run,
        "rayjob": RayJobController(client, mode).run,
        "rayservice": RayServiceController(client, mode).run,
    }


__all__ = [
    "HostMode",
    "RayClusterController",
    "RayClusterOptions",
    "RayJobController",
    "embedded_controllers",
    "embedded_mode",
]
