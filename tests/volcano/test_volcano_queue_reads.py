"""What the queue loop reads each cycle: the pods of the namespaces that hold PodGroups, and
no pods at all while there is no PodGroup (a cluster without Volcano work pays nothing)."""

from __future__ import annotations

from typing import Any

from volcanokit import NS, SCHED, registry

from kubehpc.controllers.volcano import VolcanoQueueController
from kubehpc.store.client import ListOptions, ObjectList
from kubehpc.store.store import Store

Obj = dict[str, Any]


class CountingStore:
    """The store, noting every Pod list (with the namespace it asked for)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pod_lists: list[str | None] = []

    def list(self, api_version: str, kind: str, options: ListOptions | None = None) -> ObjectList:
        if kind == "Pod":
            self.pod_lists.append(options.namespace if options else None)
        return self.store.list(api_version, kind, options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def pod(name: str, namespace: str, group: str | None = None) -> Obj:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


def podgroup(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": SCHED,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": 1},
    }


def loop() -> tuple[Store, CountingStore, VolcanoQueueController]:
    store = Store(registry(), None)
    counting = CountingStore(store)
    controller = VolcanoQueueController(counting, events=lambda *a, **k: None)  # type: ignore[arg-type]
    controller.ensure_default_queue()
    return store, counting, controller


def test_a_cycle_without_podgroups_lists_no_pods() -> None:
    store, counting, controller = loop()
    for i in range(3):
        store.create(pod(f"plain-{i}", NS))
    controller.cycle()
    assert counting.pod_lists == []
    assert store.get(SCHED, "Queue", "default")["status"]["state"] == "Open"


def test_a_cycle_reads_pods_only_in_the_namespaces_of_podgroups() -> None:
    store, counting, controller = loop()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    store.create(podgroup("g", "team"))
    member = store.create(pod("member", "team", group="g"))
    store.update_status({**member, "status": {"phase": "Running"}})
    store.create(pod("plain", NS))
    controller.cycle()
    assert counting.pod_lists == ["team"]
    assert store.get(SCHED, "PodGroup", "g", "team")["status"]["running"] == 1  # the member counted
