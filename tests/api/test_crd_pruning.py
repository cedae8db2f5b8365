"""Custom kinds prune unknown fields under Warn and Ignore, as the API server does for CRDs with
structural schemas; Strict refuses them."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation


def cluster_queue(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO", **extra},
    }


def validate(obj: dict[str, Any], mode: FieldValidation) -> list[str]:
    _, version = build_registry().for_kind(obj["apiVersion"], obj["kind"])
    return version.validate(obj, mode)


def test_an_unknown_field_is_warned_about_and_pruned_under_warn() -> None:
    obj = cluster_queue(colour="blue")
    assert validate(obj, FieldValidation.WARN) == ['unknown field "spec.colour"']
    assert "colour" not in obj["spec"] and obj["spec"]["queueingStrategy"] == "StrictFIFO"


def test_an_unknown_field_is_pruned_silently_under_ignore() -> None:
    obj = cluster_queue(colour="blue")
    assert validate(obj, FieldValidation.IGNORE) == []
    assert "colour" not in obj["spec"]


def test_an_unknown_field_is_refused_and_kept_under_strict() -> None:
    obj = cluster_queue(colour="blue")
    with pytest.raises(Invalid):
        validate(obj, FieldValidation.STRICT)
    assert obj["spec"]["colour"] == "blue"
