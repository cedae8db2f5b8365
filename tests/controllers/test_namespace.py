"""The namespace controller empties a terminating namespace, then the namespace goes."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest

from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.controllers.gc import kinds_of
from kubehpc.controllers.namespace import NamespaceController
from kubehpc.store.client import DeleteOptions, ListOptions
from kubehpc.store.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    yield s
    s.close()


@pytest.fixture
def controller(store: Store) -> NamespaceController:
    return NamespaceController(store, kinds_of(store.registry))


def pod(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"containers": [{"name": "m", "image": "x"}], **spec},
    }


def namespace_exists(store: Store) -> bool:
    try:
        store.get("v1", "Namespace", "team")
    except NotFound:
        return False
    return True


def test_deleting_a_namespace_deletes_its_content_then_the_namespace(
    store: Store, controller: NamespaceController
) -> None:
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}})
    store.create(pod("p"))
    store.delete("v1", "Namespace", "team")
    controller.reconcile_once()
    assert store.list("v1", "ConfigMap", ListOptions(namespace="team")).items == []
    assert store.list("v1", "Pod", ListOptions(namespace="team")).items == []
    controller.reconcile_once()
    assert not namespace_exists(store)


def test_a_terminating_namespace_waits_for_gracefully_terminating_pods(
    store: Store, controller: NamespaceController
) -> None:
    store.create(pod("p", nodeName="node-1"))
    store.delete("v1", "Namespace", "team")
    for _ in range(3):
        controller.reconcile_once()
    assert namespace_exists(store)  # the pod is still terminating on its node
    store.delete("v1", "Pod", "p", "team", DeleteOptions(grace_period_seconds=0))
    controller.reconcile_once()
    assert not namespace_exists(store)


def test_active_namespaces_are_left_alone(store: Store, controller: NamespaceController) -> None:
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}})
    assert controller.reconcile_once() == 0
    assert store.get("v1", "ConfigMap", "c", "team")


@contextlib.contextmanager
def running(controller: NamespaceController, resync_seconds: float) -> Iterator[threading.Event]:
    """The controller's loop in a thread until the block ends; it must stop when told."""
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), kwargs={"resync_seconds": resync_seconds})
    runner.start()
    try:
        yield stop
    finally:
        stop.set()
        runner.join(timeout=10)
    assert not runner.is_alive()


def wait_until_gone(store: Store, stop: threading.Event) -> None:
    for _ in range(200):
        if not namespace_exists(store):
            return
        stop.wait(0.05)
    raise AssertionError("the namespace is still there after 10 s")


def test_run_empties_and_removes_a_deleted_namespace_until_stopped(
    store: Store, controller: NamespaceController
) -> None:
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}})
    with running(controller, resync_seconds=0.05) as stop:
        store.delete("v1", "Namespace", "team")
        wait_until_gone(store, stop)


def test_run_looks_again_soon_while_a_namespace_waits_for_its_content_to_go(
    store: Store, controller: NamespaceController
) -> None:
    # The last pod goes long after the namespace was deleted, and nothing but Namespaces is
    # watched: the controller polls while a namespace is terminating, not once a resync.
    store.create(pod("p", nodeName="node-1"))
    with running(controller, resync_seconds=3600) as stop:
        store.delete("v1", "Namespace", "team")
        stop.wait(0.5)
        assert namespace_exists(store)  # the pod is still terminating on its node
        store.delete("v1", "Pod", "p", "team", DeleteOptions(grace_period_seconds=0))
        wait_until_gone(store, stop)


def test_run_watches_namespaces_only(store: Store, controller: NamespaceController) -> None:
    with running(controller, resync_seconds=3600) as stop:
        stop.wait(0.2)
        watching = sorted(t.name for t in threading.enumerate() if t.name.startswith("namespace-watch-"))
        assert watching == ["namespace-watch-Namespace"]
