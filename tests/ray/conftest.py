"""One embedded control plane (store, controllers, the real node agent) for a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from raykit import need_ray

from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.home import Home


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    need_ray()
    cp = ControlPlane(Home(tmp_path_factory.mktemp("ray") / "home")).start()
    try:
        yield cp
    finally:
        for kind in ("RayService", "RayJob", "RayCluster"):
            for obj in cp.store.list("ray.io/v1", kind).items:
                cp.store.delete("ray.io/v1", kind, obj["metadata"]["name"], obj["metadata"]["namespace"])
        _wait_pods_gone(cp)
        cp.stop()


def _wait_pods_gone(cp: ControlPlane, timeout: float = 60.0) -> None:
    # Ray nodes are host processes: give the agent time to stop them before the plane goes.
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and cp.store.list("v1", "Pod").items:
        time.sleep(0.5)
