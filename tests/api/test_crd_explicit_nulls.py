"""A custom kind's explicit null reads as "not set", as Go's JSON decoding treats it: a null
where a value of another type is expected is no error, and a string that merely contains
"null" is an ordinary string."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation


def cluster_queue(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, **spec},
    }


def validate(obj: dict[str, Any], mode: FieldValidation = FieldValidation.STRICT) -> list[str]:
    _, version = build_registry().for_kind(obj["apiVersion"], obj["kind"])
    return version.validate(obj, mode)


def test_an_explicit_null_is_not_set() -> None:
    assert validate(cluster_queue(queueingStrategy=None, cohortName=None)) == []


def test_a_nested_explicit_null_is_not_set() -> None:
    assert validate(cluster_queue(preemption={"withinClusterQueue": None})) == []


def test_a_string_containing_null_is_checked_as_a_string() -> None:
    assert validate(cluster_queue(cohortName="null-team")) == []
    with pytest.raises(Invalid, match="queueingStrategy"):
        validate(cluster_queue(queueingStrategy="nullFIFO"))


def test_an_unknown_field_beside_a_null_is_still_pruned_under_warn() -> None:
    obj = cluster_queue(queueingStrategy=None, colour="blue")
    assert validate(obj, FieldValidation.WARN) == ['unknown field "spec.colour"']
    assert "colour" not in obj["spec"]
