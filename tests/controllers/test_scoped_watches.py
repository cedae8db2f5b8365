"""Controllers follow only their own objects of the kinds every framework shares (Pods, Jobs), as
the upstream operators scope their informer caches (KubeRay's CacheSelectors) or filter in their
handlers (Volcano's, coscheduling's): the store sends them nothing else, so a Kueue Job's pods
never wake KubeRay's, Volcano's or the MPI Operator's threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubehpc.api.kinds import default_registry
from kubehpc.controllers.mpijob.controller import MPIJobController
from kubehpc.controllers.ray import RayClusterController, RayJobController
from kubehpc.controllers.volcano import CoschedulingStatus, VolcanoJobController
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import ListOptions, Watch
from kubehpc.store.store import Store

Obj = dict[str, Any]
Loop = Callable[[threading.Event], None]


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(default_registry(), None)
    yield s
    s.close()


class RecordingClient:
    """The store, with the label selector of every watch opened through it written down."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.selectors: dict[tuple[str, str], str] = {}

    def watch(self, api_version: str, kind: str, options: ListOptions | None = None, **kw: Any) -> Watch:
        self.selectors[(api_version, kind)] = (options or ListOptions()).label_selector
        return self._store.watch(api_version, kind, options, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def selectors_of(
    store: Store, controller: Callable[[Any], Any], *kinds: tuple[str, str]
) -> dict[tuple[str, str], str]:
    """The label selectors ``controller`` (built on a client, run until stopped) watches
    ``kinds`` with, once it watches them all."""
    client = RecordingClient(store)
    stop = threading.Event()
    run: Loop = controller(client).run
    thread = threading.Thread(target=run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not all(k in client.selectors for k in kinds) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(5)
    assert all(k in client.selectors for k in kinds), f"never watched {kinds}: {client.selectors}"
    return {k: client.selectors[k] for k in kinds}


def configmap(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
    }


def test_a_scoped_follower_is_handed_only_the_objects_its_selector_selects(store: Store) -> None:
    seen: list[str] = []
    stop = threading.Event()
    followers = Followers(store, read_only=True)
    followers.start(stop, "v1", "ConfigMap", lambda _type, obj: seen.append(obj["metadata"]["name"]), "team")

    def wait_for(name: str) -> None:
        deadline = time.monotonic() + 10
        while name not in seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert name in seen, f"{name} never reached the handler: {seen}"

    try:
        store.create(configmap("first", {"team": "a"}))  # until the watch is open
        for i in range(1000):
            if seen:
                break
            time.sleep(0.01)
            store.create(configmap(f"again-{i}", {"team": "a"}))
        store.create(configmap("unlabelled"))
        store.create(configmap("labelled", {"team": "b"}))
        wait_for("labelled")
        assert "unlabelled" not in seen
    finally:
        stop.set()
        followers.stop()


def test_the_ray_cluster_controller_follows_only_pods_with_a_ray_node_type(store: Store) -> None:
    assert selectors_of(store, RayClusterController, ("v1", "Pod")) == {("v1", "Pod"): "ray.io/node-type"}


def test_the_ray_job_controller_follows_only_the_jobs_kuberay_created(store: Store) -> None:
    found = selectors_of(store, RayJobController, ("batch/v1", "Job"), ("ray.io/v1", "RayCluster"))
    assert found == {
        ("batch/v1", "Job"): "app.kubernetes.io/created-by=kuberay-operator",
        ("ray.io/v1", "RayCluster"): "",
    }


def test_the_mpijob_controller_follows_only_its_operators_pods(store: Store) -> None:
    found = selectors_of(store, MPIJobController, ("v1", "Pod"), ("batch/v1", "Job"))
    # Launcher Jobs are labelled only ``app: <job>``, as the MPI Operator labels them: all followed.
    assert found == {
        ("v1", "Pod"): "training.kubeflow.org/operator-name=mpi-operator",
        ("batch/v1", "Job"): "",
    }


def test_the_volcano_job_controller_follows_only_pods_of_volcano_jobs(store: Store) -> None:
    assert selectors_of(store, VolcanoJobController, ("v1", "Pod")) == {("v1", "Pod"): "volcano.sh/job-name"}


def test_coscheduling_follows_only_pods_of_a_pod_group(store: Store) -> None:
    assert selectors_of(store, CoschedulingStatus, ("v1", "Pod")) == {
        ("v1", "Pod"): "scheduling.x-k8s.io/pod-group"
    }
