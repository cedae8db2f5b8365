"""The CRDs installed into a real cluster: only kubehpc's own groups, and schemas rewritten
into what kube-apiserver's structural-schema check accepts (each rule found refused by 1.20)."""

from __future__ import annotations

from kubehpc.api.kinds import default_registry
from kubehpc.kube.crds import _float_safe, _list_map_keys_defaulted, _structural, owned, owned_crds


def test_only_kinds_outside_kubernetes_groups_are_owned() -> None:
    groups = {rt.group for rt in default_registry() if owned(rt)}
    assert "kueue.x-k8s.io" in groups
    assert not groups & {"", "batch", "scheduling.k8s.io", "coordination.k8s.io"}


def test_an_optional_field_becomes_nullable() -> None:
    schema = {"anyOf": [{"type": "number"}, {"type": "integer"}, {"type": "null"}]}
    assert _structural(schema) == {"type": "number", "nullable": True}


def test_a_quantity_becomes_int_or_string() -> None:
    schema = {"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
    fixed = _structural(schema)
    assert fixed["additionalProperties"] == {"x-kubernetes-int-or-string": True}


def test_null_and_empty_string_defaults_are_dropped() -> None:
    schema = {
        "properties": {"a": {"type": "string", "default": ""}, "b": {"type": "string", "default": None}}
    }
    assert _structural(schema) == {"properties": {"a": {"type": "string"}, "b": {"type": "string"}}}


def test_int64_bounds_a_float_cannot_hold_are_dropped() -> None:
    schema = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
    assert _float_safe(schema) == {"type": "integer"}
    assert _float_safe({"type": "integer", "maximum": 100}) == {"type": "integer", "maximum": 100}


def test_list_map_keys_get_a_default_or_the_list_stays_plain() -> None:
    ports = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
        "items": {
            "required": ["containerPort"],
            "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string"}},
        },
    }
    assert _list_map_keys_defaulted(ports)["items"]["properties"]["protocol"]["default"] == "TCP"
    secrets = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"properties": {"name": {"type": "string"}}},
    }
    plain = _list_map_keys_defaulted(secrets)
    assert "x-kubernetes-list-type" not in plain and "x-kubernetes-list-map-keys" not in plain


def test_no_generated_crd_keeps_a_null_type_branch() -> None:
    def walk(node: object) -> None:
        if isinstance(node, dict):
            assert node.get("type") != "null"
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for crd in owned_crds(default_registry()):
        walk(crd["spec"])
