"""``kubehpc describe`` and ``kubehpc events``: objects for people, with what happened to them."""

from __future__ import annotations

import itertools
from typing import Any

from cli_harness import Kubehpc

from kubehpc.kube.rest import RestClient

_seq = itertools.count()


def record_event(
    api: RestClient, obj: dict[str, Any], reason: str, message: str, kind: str = "Normal"
) -> None:
    meta = obj["metadata"]
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{next(_seq)}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": "test-controller"},
            "firstTimestamp": meta["creationTimestamp"],
            "lastTimestamp": meta["creationTimestamp"],
            "count": 1,
        }
    )


def config_map(api: RestClient, namespace: str, name: str) -> dict[str, Any]:
    return api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "demo"}},
            "data": {"maxRetries": "3"},
        }
    )


def test_describe_shows_metadata_and_fields(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "described")
    out = kubehpc("describe", "configmap", "described").out
    assert "Name:         described\n" in out
    assert f"Namespace:    {namespace}\n" in out
    assert "Labels:       app=demo\n" in out
    assert "maxRetries:" in out  # data keys are shown as written, not title-cased


def test_describe_ends_with_the_objects_events(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    obj = config_map(api, namespace, "eventful")
    record_event(api, obj, "Reloaded", "picked up new settings")
    out = kubehpc("describe", "cm/eventful").out
    events = out[out.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[3].split()[:2] == ["Normal", "Reloaded"]
    assert "test-controller" in events[3] and events[3].endswith("picked up new settings")


def test_describe_without_events_says_none(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "quiet")
    assert kubehpc("describe", "cm", "quiet").out.endswith("Events:  <none>\n")


def test_describe_of_a_missing_object_is_not_found(kubehpc: Kubehpc) -> None:
    result = kubehpc("describe", "cm", "ghost")
    assert result.code == 1
    assert result.err.startswith("Error from server (NotFound):")


def test_events_lists_last_seen_type_reason_object_message(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    obj = config_map(api, namespace, "source")
    record_event(api, obj, "Broken", "it broke", kind="Warning")
    lines = kubehpc("events").out.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert lines[1].split()[1:] == ["Warning", "Broken", "ConfigMap/source", "it", "broke"]


def test_events_for_one_object_leaves_out_the_others(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    record_event(api, config_map(api, namespace, "mine"), "Mine", "about mine")
    record_event(api, config_map(api, namespace, "other"), "Other", "about other")
    out = kubehpc("events", "--for", "configmap/mine").out
    assert "Mine" in out and "Other" not in out


def test_events_in_an_empty_namespace_says_none_found(kubehpc: Kubehpc, namespace: str) -> None:
    result = kubehpc("events")
    assert result.err == f"No events found in {namespace} namespace.\n"
