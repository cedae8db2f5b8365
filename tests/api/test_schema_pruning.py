"""Unknown fields of built-in kinds are dropped under fieldValidation Warn and Ignore, as the
API server's decoder drops them; Strict rejects them and leaves the object alone."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api import schema
from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation, Registry
from kubehpc.store.client import WriteOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]

POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "annotations": {"any/key": "kept"}},
    "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "trainer:v1", "env": [{"name": "A", "value": "1"}]}],
    },
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def _validate(registry: Registry, obj: Obj, mode: FieldValidation) -> list[str]:
    _, version = registry.for_kind(obj["apiVersion"], obj["kind"])
    return version.validate(obj, mode)


def _pod_with_typos() -> Obj:
    pod = copy.deepcopy(POD)
    pod["spec"]["priorityClass"] = "high"  # the real field is priorityClassName
    pod["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    return pod


def test_warn_drops_an_unknown_field_and_still_warns_about_it(registry: Registry) -> None:
    pod = _pod_with_typos()
    warnings = _validate(registry, pod, FieldValidation.WARN)
    assert warnings == [
        'unknown field "spec.containers[0].imagePullPolicyy"',
        'unknown field "spec.priorityClass"',
    ]
    assert pod == POD


def test_ignore_drops_an_unknown_field_silently(registry: Registry) -> None:
    pod = _pod_with_typos()
    assert _validate(registry, pod, FieldValidation.IGNORE) == []
    assert pod == POD


def test_strict_rejects_an_unknown_field_and_leaves_the_object_alone(registry: Registry) -> None:
    pod = _pod_with_typos()
    with pytest.raises(Invalid):
        _validate(registry, pod, FieldValidation.STRICT)
    assert pod == _pod_with_typos()


def test_known_and_free_form_fields_are_kept(registry: Registry) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "b"}},
        "data": {"anything": "goes", "x.y": "z"},
    }
    kept = copy.deepcopy(config_map)
    assert _validate(registry, config_map, FieldValidation.IGNORE) == []
    assert config_map == kept


def test_an_unknown_field_inside_an_embedded_definition_is_dropped_under_warn() -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "i", "bogus": 1}]}}
    causes, warnings = schema.validate_definition(
        "io.k8s.api.core.v1.PodTemplateSpec", template, "spec.template", FieldValidation.WARN
    )
    assert (causes, warnings) == ([], ['unknown field "spec.template.spec.containers[0].bogus"'])
    assert template == {"spec": {"containers": [{"name": "c", "image": "i"}]}}


@pytest.fixture
def store(registry: Registry) -> Iterator[Store]:
    s = Store(registry, None)
    yield s
    s.close()


@pytest.mark.parametrize("mode", ["Warn", "Ignore"])
def test_a_stored_object_reads_back_without_its_unknown_fields(store: Store, mode: str) -> None:
    pod = _pod_with_typos()
    pod["metadata"]["nickname"] = "typo in metadata"
    store.create(pod, options=WriteOptions(field_validation=mode))
    stored = store.get("v1", "Pod", "p", namespace="default")
    assert "priorityClass" not in stored["spec"]
    assert "imagePullPolicyy" not in stored["spec"]["containers"][0]
    assert "nickname" not in stored["metadata"]
    assert stored["metadata"]["annotations"] == {"any/key": "kept"}
