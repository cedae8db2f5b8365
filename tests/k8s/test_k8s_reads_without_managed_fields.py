"""The scheduler's informers read Pods and Nodes from the real API server without
metadata.managedFields (cut before decoding), and otherwise exactly as the server sent them."""

from __future__ import annotations

from typing import Any

from kubehpc.api.errors import AlreadyExists
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions, PatchType

NAMESPACE = "reads"


def pending_pod(api: RestClient, name: str) -> dict[str, Any]:
    try:
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    except AlreadyExists:
        pass
    return api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"managedFields": "spec"}},
            "spec": {
                "schedulerName": "nobody",  # stays pending
                "containers": [{"name": "main", "image": "pause"}],
            },
        }
    )


def without(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def test_a_listed_pod_is_the_servers_pod_without_its_managed_fields(api: RestClient) -> None:
    pending_pod(api, "listed")
    plain = api.list("v1", "Pod", ListOptions(namespace=NAMESPACE)).items
    cut = api.list("v1", "Pod", ListOptions(namespace=NAMESPACE, without_managed_fields=True)).items
    assert all(p["metadata"].get("managedFields") for p in plain)
    assert cut == [without(p) for p in plain]


def test_a_listed_node_is_the_servers_node_without_its_managed_fields(api: RestClient, nodes: Any) -> None:
    plain = api.list("v1", "Node").items
    cut = api.list("v1", "Node", ListOptions(without_managed_fields=True)).items
    assert plain and all(n["metadata"].get("managedFields") for n in plain)
    assert [without(n) for n in plain] == cut


def test_a_watched_pod_change_arrives_without_its_managed_fields(api: RestClient) -> None:
    created = pending_pod(api, "watched")
    rv = created["metadata"]["resourceVersion"]
    watch = api.watch(
        "v1", "Pod", ListOptions(namespace=NAMESPACE, resource_version=rv, without_managed_fields=True)
    )
    try:
        api.patch(
            "v1", "Pod", "watched", {"metadata": {"labels": {"seen": "yes"}}}, PatchType.MERGE, NAMESPACE
        )
        event = next(e for e in watch if e.object["metadata"]["name"] == "watched")
    finally:
        watch.stop()
    now = api.get("v1", "Pod", "watched", NAMESPACE)
    assert event.type == "MODIFIED"
    assert event.object == without(now)
