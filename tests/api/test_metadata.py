"""metadata is validated for every kind, before the kind's own rules."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Invalid
from kubehpc.api.meta import validate_metadata
from kubehpc.api.registry import FieldValidation

STRICT = FieldValidation.STRICT


def _pod(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def _fields(obj: dict[str, Any], mode: FieldValidation = STRICT, **kw: Any) -> list[str]:
    with pytest.raises(Invalid) as err:
        validate_metadata(obj, namespaced=True, mode=mode, **kw)
    return [c.field for c in err.value.causes]


def test_valid_metadata_passes_without_warnings() -> None:
    obj = _pod(name="p", namespace="ns", labels={"app": "x"}, annotations={"a.io/b": "c"})
    assert validate_metadata(obj, namespaced=True, mode=STRICT) == []


def test_name_or_generate_name_is_required() -> None:
    with pytest.raises(Invalid) as err:
        validate_metadata(_pod(), namespaced=True, mode=STRICT)
    (cause,) = err.value.causes
    assert (cause.field, cause.reason) == ("metadata.name", "FieldValueRequired")
    assert "name or generateName is required" in cause.message


def test_generate_name_alone_is_enough_and_may_end_in_a_dash() -> None:
    assert validate_metadata(_pod(generateName="sample-job-"), namespaced=True, mode=STRICT) == []


def test_a_name_breaking_dns1123_is_reported_on_metadata_name() -> None:
    with pytest.raises(Invalid) as err:
        validate_metadata(_pod(name="Bad_Name"), namespaced=True, mode=STRICT)
    assert err.value.causes[0].field == "metadata.name"
    assert err.value.message.startswith(
        'Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
    )


def test_namespace_names_must_be_dns_labels() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert _fields(ns, name_rule="label") == ["metadata.name"]


def test_namespace_field_must_be_a_dns_label() -> None:
    assert _fields(_pod(name="p", namespace="Team_A")) == ["metadata.namespace"]


def test_bad_label_keys_and_values_are_reported_on_metadata_labels() -> None:
    assert _fields(_pod(name="p", labels={"a/b/c": "x", "ok": "-bad"})) == [
        "metadata.labels",
        "metadata.labels",
    ]


def test_bad_annotation_keys_are_reported() -> None:
    assert _fields(_pod(name="p", annotations={"/x": "1"})) == ["metadata.annotations"]


def test_owner_references_need_api_version_kind_name_and_uid() -> None:
    fields = _fields(_pod(name="p", ownerReferences=[{"kind": "Job"}]))
    assert fields == [
        "metadata.ownerReferences[0].apiVersion",
        "metadata.ownerReferences[0].name",
        "metadata.ownerReferences[0].uid",
    ]


def test_unknown_metadata_field_is_an_error_under_strict() -> None:
    assert _fields(_pod(name="p", lables={"a": "b"})) == ["metadata.lables"]


def test_unknown_metadata_field_is_a_warning_under_warn() -> None:
    warnings = validate_metadata(_pod(name="p", lables={}), namespaced=True, mode=FieldValidation.WARN)
    assert warnings == ['unknown field "metadata.lables"']


def test_unknown_metadata_field_is_accepted_under_ignore() -> None:
    assert validate_metadata(_pod(name="p", lables={}), namespaced=True, mode=FieldValidation.IGNORE) == []


def test_label_values_must_be_strings() -> None:
    assert _fields(_pod(name="p", labels={"enabled": True})) == ["metadata.labels.enabled"]


def test_only_one_owner_reference_may_be_the_controller() -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "uid": "u", "controller": True}
    owners = [owner | {"name": "a"}, owner | {"name": "b", "uid": "v"}]
    with pytest.raises(Invalid) as err:
        validate_metadata(_pod(name="p", ownerReferences=owners), namespaced=True, mode=STRICT)
    (cause,) = err.value.causes
    assert cause.field == "metadata.ownerReferences"
    assert (
        'Only one reference can have Controller set to true. Found "true" in references for Job/a, Job/b'
        in (cause.message)
    )
