"""The RayService controller's rules on the in-memory store, without Ray: pods are made running
by hand and Ray Serve's REST API is a stand-in per cluster, so each rule (in-place update, new
cluster and switch-over, health in status) is checked on its own in milliseconds. The same
flow with real Ray Serve is tests/ray/test_rayservice_real.py."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from raykit import NS, RAY, cluster_spec, worker_group

from kubehpc.api.kinds import default_registry
from kubehpc.controllers.ray import RayClusterController, RayServiceController
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]


class Serve:
    """Ray Serve's REST API of every cluster, keyed by the dashboard address asked."""

    def __init__(self) -> None:
        self.deployed: dict[str, list[Obj]] = {}
        self.health: dict[str, tuple[str, str]] = {}  # address -> (status, message)

    def __call__(self, address: str) -> Endpoint:
        return Endpoint(self, address)

    def cluster_of(self, address: str) -> str:
        return address.split("-head-svc")[0]

    def deployments(self, cluster: str) -> list[Obj]:
        return [c for a, cs in self.deployed.items() if self.cluster_of(a) == cluster for c in cs]


class Endpoint:
    def __init__(self, serve: Serve, address: str) -> None:
        self.serve, self.address = serve, address

    def deploy_serve(self, config: Obj) -> None:
        self.serve.deployed.setdefault(self.address, []).append(config)

    def serve_details(self) -> Obj:
        configs = self.serve.deployed.get(self.address) or []
        if not configs:
            return {"applications": {}}
        status, message = self.serve.health.get(self.address, ("RUNNING", ""))
        deployment = "HEALTHY" if status == "RUNNING" else "UNHEALTHY"
        return {
            "applications": {
                app["name"]: {
                    "status": status,
                    "message": message,
                    "deployments": {"Greeter": {"status": deployment, "message": message}},
                }
                for app in configs[-1]["applications"]
            }
        }


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def serve_config(greeting: str) -> str:
    app = {"name": "greeter", "import_path": "greeter_app:app", "args": {"greeting": greeting}}
    return yaml.safe_dump({"applications": [app]})


class Harness:
    def __init__(self) -> None:
        self.store = Store(default_registry(), None)
        self.serve, self.clock = Serve(), Clock()
        self.services = RayServiceController(self.store, dashboard=self.serve, clock=self.clock)
        self.clusters = RayClusterController(self.store)

    def create(self, **spec: Any) -> None:
        body = {
            "serveConfigV2": serve_config("hello"),
            "rayClusterConfig": cluster_spec([worker_group("small", 1, 0, 2)]),
            **spec,
        }
        self.store.create(
            {
                "apiVersion": RAY,
                "kind": "RayService",
                "metadata": {"name": "svc", "namespace": NS},
                "spec": body,
            }
        )

    def update(self, change: Any) -> None:
        obj = self.store.get(RAY, "RayService", "svc", NS)
        change(obj["spec"])
        self.store.update(obj)

    def step(self, rounds: int = 4) -> Obj:
        for _ in range(rounds):
            self.services.reconcile(NS, "svc")
            for rc in self.store.list(RAY, "RayCluster").items:
                self.clusters.reconcile(NS, rc["metadata"]["name"])
            for pod in self.store.list("v1", "Pod", ListOptions(namespace=NS)).items:
                if (pod.get("status") or {}).get("phase") != "Running":
                    pod["status"] = {
                        "phase": "Running",
                        "podIP": "10.0.0.9",
                        "conditions": [{"type": "Ready", "status": "True"}],
                    }
                    self.store.update_status(pod)
        status: Obj = self.store.get(RAY, "RayService", "svc", NS)["status"]
        return status

    def cluster_names(self) -> list[str]:
        return sorted(
            c["metadata"]["name"]
            for c in self.store.list(RAY, "RayCluster").items
            if not c["metadata"].get("deletionTimestamp")
        )

    def serving(self) -> str:
        svc = self.store.get("v1", "Service", "svc-serve-svc", NS)
        return str(svc["spec"]["selector"]["ray.io/cluster"])


@pytest.fixture
def h() -> Harness:
    return Harness()


def ready(status: Obj) -> str:
    return next(c["status"] for c in status["conditions"] if c["type"] == "Ready")


def test_the_serve_config_is_deployed_once_the_cluster_is_ready_and_health_makes_it_running(
    h: Harness,
) -> None:
    h.create()
    st = h.step()
    (cluster,) = h.cluster_names()
    assert [a["name"] for a in h.serve.deployments(cluster)[0]["applications"]] == ["greeter"]
    assert (st["serviceStatus"], ready(st), st["numServeEndpoints"]) == ("Running", "True", 1)
    app = st["activeServiceStatus"]["applicationStatuses"]["greeter"]
    assert (app["status"], app["serveDeploymentStatuses"]["Greeter"]["status"]) == ("RUNNING", "HEALTHY")
    assert h.serving() == cluster


def test_an_unhealthy_application_makes_the_service_not_ready_with_its_message_until_it_recovers(
    h: Harness,
) -> None:
    h.create()
    h.step()
    address = next(iter(h.serve.deployed))
    h.serve.health[address] = ("DEPLOY_FAILED", "ImportError: no module greeter_app")
    st = h.step(rounds=1)
    assert (st["serviceStatus"], ready(st), st["numServeEndpoints"]) == ("", "False", 0)
    app = st["activeServiceStatus"]["applicationStatuses"]["greeter"]
    assert (app["status"], app["message"]) == ("DEPLOY_FAILED", "ImportError: no module greeter_app")
    del h.serve.health[address]
    assert h.step(rounds=1)["serviceStatus"] == "Running"


def test_a_serve_config_change_alone_is_deployed_in_place_on_the_same_cluster(h: Harness) -> None:
    h.create()
    h.step()
    (cluster,) = h.cluster_names()
    h.update(lambda s: s.update(serveConfigV2=serve_config("hi")))
    st = h.step()
    assert h.cluster_names() == [cluster] and "pendingServiceStatus" not in st
    greetings = [c["applications"][0]["args"]["greeting"] for c in h.serve.deployments(cluster)]
    assert greetings == ["hello", "hi"]
    assert st["activeServiceStatus"]["rayClusterName"] == cluster


def test_a_replicas_change_is_no_upgrade(h: Harness) -> None:
    # KubeRay hashes the cluster spec without replicas and workersToDelete: scaling a group
    # (what the autoscaler does) keeps the cluster.
    h.create()
    h.step()
    (cluster,) = h.cluster_names()
    h.update(lambda s: s["rayClusterConfig"]["workerGroupSpecs"][0].update(replicas=2))
    st = h.step()
    assert h.cluster_names() == [cluster] and "pendingServiceStatus" not in st


def test_a_cluster_spec_change_brings_up_a_new_cluster_that_takes_over_then_the_old_one_goes(
    h: Harness,
) -> None:
    h.create(rayClusterDeletionDelaySeconds=30)
    h.step()
    (old,) = h.cluster_names()

    def bigger_head(spec: Obj) -> None:
        spec["rayClusterConfig"]["headGroupSpec"]["rayStartParams"]["num-cpus"] = "2"

    h.update(bigger_head)
    h.services.reconcile(NS, "svc")
    st = h.store.get(RAY, "RayService", "svc", NS)["status"]
    new = st["pendingServiceStatus"]["rayClusterName"]
    assert new != old and h.cluster_names() == sorted([old, new])
    assert next(c["status"] for c in st["conditions"] if c["type"] == "UpgradeInProgress") == "True"
    assert h.serving() == old  # the old cluster serves while the new one comes up
    st = h.step()
    assert st["activeServiceStatus"]["rayClusterName"] == new and "pendingServiceStatus" not in st
    assert h.serving() == new and st["serviceStatus"] == "Running"
    assert h.cluster_names() == sorted([old, new])  # rayClusterDeletionDelaySeconds not yet over
    h.clock.now += 31
    h.step(rounds=1)
    assert h.cluster_names() == [new]
