"""Pods and Nodes from kube-apiserver are decoded without metadata.managedFields, and nothing
else is lost: the cut is taken only where the struct order of Go's encoder makes it exact."""

from __future__ import annotations

from typing import Any

import orjson

from kubehpc.kube.managedfields import without_managed_fields

TRICKY = ']},"spec":{,"managedFields":[],"'
"""Marker bytes inside string values: escaped there, so they must not be taken for structure."""


def managed_fields() -> list[dict[str, Any]]:
    return [
        {
            "manager": "kubectl" + TRICKY,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-03T08:01:55Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:spec": {}}},
                "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}}}},
            },
        },
        {"manager": "kube-scheduler", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"PodScheduled"}': {".": {}}}}}},
    ]  # fmt: skip


def go_pod(name: str, with_managed_fields: bool = True) -> dict[str, Any]:
    """A Pod with its keys in kube-apiserver's (Go struct) order, labels and annotations that
    spell the markers."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "bench",
        "uid": f"uid-{name}",
        "resourceVersion": "5198",
        "creationTimestamp": "2026-12-03T08:01:55Z",
        "labels": {"managedFields": "x", "spec": "y"},
        "annotations": {"note": TRICKY},
        "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
        ],
        "finalizers": ["example.com/keep"],
    }
    if with_managed_fields:
        metadata["managedFields"] = managed_fields()
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": metadata,
        "spec": {
            "containers": [{"name": "main", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
            "nodeSelector": {"managedFields": "z"},
            "nodeName": "n1",
        },
        "status": {"phase": "Pending"},
    }


def stripped(obj: dict[str, Any]) -> dict[str, Any]:
    out = orjson.loads(orjson.dumps(obj))
    out["metadata"].pop("managedFields", None)
    return out


def test_a_pod_as_kube_apiserver_writes_it_decodes_to_itself_without_managed_fields() -> None:
    pod = go_pod("p-1")
    body = orjson.dumps(pod)
    cut = without_managed_fields(body)
    assert len(cut) < len(body)
    assert orjson.loads(cut) == stripped(pod)


def test_every_object_of_a_list_loses_only_its_own_managed_fields() -> None:
    pods = [go_pod("p-1"), go_pod("p-2", with_managed_fields=False), go_pod("p-3")]
    doc = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": pods}
    assert orjson.loads(without_managed_fields(orjson.dumps(doc)))["items"] == [stripped(p) for p in pods]


def test_a_watch_event_loses_its_objects_managed_fields() -> None:
    event = {"type": "MODIFIED", "object": go_pod("p-1")}
    cut = orjson.loads(without_managed_fields(orjson.dumps(event)))
    assert cut == {"type": "MODIFIED", "object": stripped(go_pod("p-1"))}


def test_a_body_without_managed_fields_is_returned_as_it_came() -> None:
    body = orjson.dumps(go_pod("p-1", with_managed_fields=False))
    assert without_managed_fields(body) is body


def test_a_pod_with_its_keys_sorted_is_left_whole() -> None:
    """``kubectl get -o yaml`` sorts keys: metadata's name, namespace and ownerReferences then
    follow managedFields, and a cut up to the next ``]},"spec":{`` would take them too."""
    body = orjson.dumps(go_pod("p-1"), option=orjson.OPT_SORT_KEYS)
    assert without_managed_fields(body) is body


def test_a_body_whose_managed_fields_never_close_before_spec_is_left_whole() -> None:
    pod = go_pod("p-1")
    del pod["spec"]
    body = orjson.dumps(pod)
    assert without_managed_fields(body) is body


def test_managed_fields_followed_by_another_metadata_key_are_left_whole() -> None:
    """Written by another encoder, managedFields may come before ownerReferences: the next
    ``]},"spec":{`` then closes ownerReferences, and cutting up to it would take them too."""
    pod = go_pod("p-1")
    meta = pod["metadata"]
    meta["ownerReferences"] = meta.pop("ownerReferences")  # now after managedFields
    body = orjson.dumps(pod)
    assert without_managed_fields(body) is body
