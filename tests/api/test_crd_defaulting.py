"""Structural-schema defaulting of custom resources, as the API server does it: a field the
object leaves out gets its schema's ``default``, at any depth, in list items and map values,
and inside a default just filled in; what the user wrote is kept; ``metadata`` is not walked."""

from __future__ import annotations

from typing import Any

from kubehpc.api.crd import apply_defaults, defaulter

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object", "default": {"x": "y"}}}},
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "strategy": {"type": "string", "default": "BestEffortFIFO"},
                "plain": {"type": "object", "properties": {"note": {"type": "string"}}},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "weights": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"value": {"type": "string", "default": "1"}},
                    },
                },
            },
        },
    },
}


def test_a_missing_object_is_defaulted_and_its_own_defaults_filled_in() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "a"}}
    defaulter(SCHEMA)(obj)
    assert obj["spec"] == {"strategy": "BestEffortFIFO"}


def test_list_items_and_map_values_get_their_defaults() -> None:
    obj: dict[str, Any] = {
        "spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "weights": {"a": {}}}
    }
    apply_defaults(SCHEMA, obj)
    assert obj["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]
    assert obj["spec"]["weights"] == {"a": {"value": "1"}}


def test_what_the_user_wrote_is_kept() -> None:
    obj: dict[str, Any] = {"spec": {"strategy": "StrictFIFO", "plain": {"note": "n"}}}
    apply_defaults(SCHEMA, obj)
    assert obj["spec"] == {"strategy": "StrictFIFO", "plain": {"note": "n"}}


def test_metadata_is_not_walked() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "a"}, "spec": {}}
    apply_defaults(SCHEMA, obj)
    assert obj["metadata"] == {"name": "a"}


def test_each_object_gets_its_own_copy_of_a_default() -> None:
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    apply_defaults(SCHEMA, first)
    apply_defaults(SCHEMA, second)
    first["spec"]["strategy"] = "changed"
    assert second["spec"]["strategy"] == "BestEffortFIFO"
    assert SCHEMA["properties"]["spec"]["default"] == {}
