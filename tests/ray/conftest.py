"""One embedded control plane (store, controllers, the real node agent) for a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from raykit import need_ray

from kubehpc.api.errors import NotFound
from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.home import Home


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    need_ray()
    cp = ControlPlane(Home(tmp_path_factory.mktemp("ray") / "home")).start()
    try:
        yield cp
    finally:
        try:
            for kind in ("RayService", "RayJob", "RayCluster"):
                for obj in cp.store.list("ray.io/v1", kind).items:
                    meta = obj["metadata"]
                    try:
                        cp.store.delete("ray.io/v1", kind, meta["name"], meta["namespace"])
                    except NotFound:
                        pass  # its owner's deletion took it meanwhile (a RayService's clusters)
            _wait_pods_gone(cp)
        finally:
            cp.stop()  # never leave the plane's Ray processes to the next module


def _wait_pods_gone(cp: ControlPlane, timeout: float = 60.0) -> None:
    # Ray nodes are host processes: give the agent time to stop them before the plane goes.
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and cp.store.list("v1", "Pod").items:
        time.sleep(0.5)
