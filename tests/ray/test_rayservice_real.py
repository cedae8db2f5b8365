"""A RayService deploys its serveConfigV2 with real Ray Serve, updates the applications in
place when only the serve config changes, and moves to a new RayCluster (then deletes the
old one) when the cluster spec changes; its status follows the applications' health."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from raykit import NS, RAY, cluster_spec, wait_until

from kubehpc.runtime.controlplane import ControlPlane

pytestmark = pytest.mark.slow
Obj = dict[str, Any]

APP = """
from ray import serve


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Greeter:
    def __init__(self, greeting):
        self.greeting = greeting

    async def __call__(self, request):
        return f"{self.greeting} from Ray Serve"


def app(args):
    return Greeter.bind(args["greeting"])
"""


def serve_config(app_dir: Path, greeting: str) -> str:
    return yaml.safe_dump(
        {
            "applications": [
                {
                    "name": "greeter",
                    "import_path": "greeter_app:app",
                    "route_prefix": "/",
                    "args": {"greeting": greeting},
                    "runtime_env": {"env_vars": {"PYTHONPATH": str(app_dir)}},
                }
            ]
        }
    )


def get(plane: ControlPlane) -> Obj:
    return plane.store.get(RAY, "RayService", "greeter", NS)


def answer(plane: ControlPlane) -> str:
    svc = plane.store.get("v1", "Service", "greeter-serve-svc", NS)
    port = svc["spec"]["ports"][0]["port"]
    try:
        r = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    except httpx.HTTPError:
        return ""
    return r.text if r.status_code == 200 else ""


def wait(plane: ControlPlane, what: str, probe: Any, timeout: float) -> Any:
    """wait_until, and on a time-out the service's status and events, to tell why."""
    try:
        return wait_until(what, probe, timeout)
    except AssertionError as err:
        events = [
            f"{e.get('type')} {e.get('reason')} {e['involvedObject'].get('name')}: {e.get('message')}"
            for e in plane.store.list("v1", "Event").items
            if e["involvedObject"].get("kind") in ("RayService", "RayCluster")
        ]
        detail = "\n".join([f"status: {get(plane).get('status')}", *events])
        raise AssertionError(f"{err}\n{detail}") from None


def update_spec(plane: ControlPlane, change: Any) -> None:
    obj = get(plane)
    change(obj["spec"])
    plane.store.update(obj)


def test_rayservice_deploys_updates_in_place_and_switches_clusters(
    plane: ControlPlane, tmp_path: Path
) -> None:
    (tmp_path / "greeter_app.py").write_text(APP)
    spec = {
        "serveConfigV2": serve_config(tmp_path, "hello"),
        "rayClusterDeletionDelaySeconds": 0,
        "rayClusterConfig": cluster_spec(dashboard=True),
    }
    plane.store.create(
        {
            "apiVersion": RAY,
            "kind": "RayService",
            "metadata": {"name": "greeter", "namespace": NS},
            "spec": spec,
        }
    )
    running = wait(
        plane,
        "the service to run",
        lambda: (s := get(plane).get("status") or {}).get("serviceStatus") == "Running" and s,
        180,
    )
    first = running["activeServiceStatus"]["rayClusterName"]
    app = running["activeServiceStatus"]["applicationStatuses"]["greeter"]
    assert app["status"] == "RUNNING"
    assert app["serveDeploymentStatuses"]["Greeter"]["status"] == "HEALTHY"
    assert {c["type"]: c["status"] for c in running["conditions"]}["Ready"] == "True"
    assert wait(plane, "the first answer", lambda: answer(plane), 30) == "hello from Ray Serve"

    # Only the serve config changes: the same cluster serves the new version.
    update_spec(plane, lambda s: s.update(serveConfigV2=serve_config(tmp_path, "hi")))
    wait(plane, "the in-place update", lambda: answer(plane) == "hi from Ray Serve", 90)
    assert get(plane)["status"]["activeServiceStatus"]["rayClusterName"] == first
    assert [c["metadata"]["name"] for c in plane.store.list(RAY, "RayCluster").items] == [first]

    # The cluster spec changes: a new cluster comes up, takes over, the old one goes.
    def more_memory(s: Obj) -> None:
        head = copy.deepcopy(s["rayClusterConfig"])
        head["headGroupSpec"]["rayStartParams"]["num-cpus"] = "2"
        s["rayClusterConfig"] = head

    update_spec(plane, more_memory)
    upgrading = wait(
        plane, "a pending cluster", lambda: (get(plane).get("status") or {}).get("pendingServiceStatus"), 30
    )
    second = upgrading["rayClusterName"]
    assert second != first
    assert answer(plane) == "hi from Ray Serve"  # the old cluster serves meanwhile
    wait(
        plane,
        "the switch-over",
        lambda: get(plane)["status"]["activeServiceStatus"]["rayClusterName"] == second,
        180,
    )
    assert wait(plane, "an answer from the new cluster", lambda: answer(plane), 30) == "hi from Ray Serve"
    wait(
        plane,
        "the old cluster to be deleted",
        lambda: [c["metadata"]["name"] for c in plane.store.list(RAY, "RayCluster").items] == [second],
        30,
    )
    status = get(plane)["status"]
    assert status["serviceStatus"] == "Running"
    assert "pendingServiceStatus" not in status
