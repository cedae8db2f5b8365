"""Label and field selectors, as the API server reads them."""

from __future__ import annotations

import pytest

from kubehpc.api.errors import BadRequest
from kubehpc.store.selectors import from_label_selector, parse_field_selector, parse_label_selector

LABELS = {"app": "web", "tier": "front", "env": "prod", "replicas": "3"}

LABEL_CASES = [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),
    ("env in (prod,staging)", True),
    ("env in (dev)", False),
    ("env notin (dev,staging)", True),
    ("env notin (prod)", False),
    ("missing notin (prod)", True),
    ("tier", True),
    ("missing", False),
    ("!missing", True),
    ("!tier", False),
    ("app=web,tier=front", True),
    ("app=web,tier=back", False),
    ("app=web, env in (prod, qa), !legacy", True),
    ("replicas>2", True),
    ("replicas<2", False),
]


@pytest.mark.parametrize(("selector", "expected"), LABEL_CASES)
def test_label_selector_string_forms_match_as_kubernetes_does(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_an_empty_value_selects_objects_whose_label_is_empty() -> None:
    assert parse_label_selector("app=").matches({"app": ""})
    assert not parse_label_selector("app=").matches(LABELS)


@pytest.mark.parametrize(
    "selector", ["=web", "app in prod", "app in ()", "app=web,,x=y", "a b c", "bad key!=x"]
)
def test_unparsable_label_selector_is_a_bad_request_naming_it(selector: str) -> None:
    with pytest.raises(BadRequest, match="label selector"):
        parse_label_selector(selector)


LABEL_SELECTOR_OBJECTS = [
    ({}, True),
    ({"matchLabels": {"app": "web"}}, True),
    ({"matchLabels": {"app": "db"}}, False),
    ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}, True),
    ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
    (
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]},
        True,
    ),
]


@pytest.mark.parametrize(("spec", "expected"), LABEL_SELECTOR_OBJECTS)
def test_label_selector_objects_match_like_their_string_forms(
    spec: dict[str, object], expected: bool
) -> None:
    assert from_label_selector(spec).matches(LABELS) is expected


def test_a_null_label_selector_object_selects_nothing() -> None:
    assert not from_label_selector(None).matches(LABELS)


def test_a_label_selector_object_with_an_unknown_operator_is_rejected() -> None:
    with pytest.raises(BadRequest, match=r"matchExpressions\[0\]\.operator"):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]})


POD = {
    "metadata": {"name": "p1", "namespace": "team-a"},
    "spec": {"nodeName": "node-1", "hostNetwork": True},
    "status": {"phase": "Running"},
    "involvedObject": {"kind": "Job", "name": "train"},
}

FIELD_CASES = [
    ("", True),
    ("metadata.name=p1", True),
    ("metadata.name==p1", True),
    ("metadata.name!=p1", False),
    ("metadata.namespace=team-a,status.phase=Running", True),
    ("spec.nodeName=", False),
    ("spec.nodeName!=", True),
    ("status.phase!=Succeeded", True),
    ("involvedObject.kind=Job,involvedObject.name=train", True),
    ("spec.hostNetwork=true", True),
    ("spec.missing=", True),
]


@pytest.mark.parametrize(("selector", "expected"), FIELD_CASES)
def test_field_selectors_compare_dotted_paths(selector: str, expected: bool) -> None:
    assert parse_field_selector(selector).matches(POD) is expected


@pytest.mark.parametrize("selector", ["metadata.name", "=x", "metadata..name=x"])
def test_unparsable_field_selector_is_a_bad_request_naming_it(selector: str) -> None:
    with pytest.raises(BadRequest, match="field selector"):
        parse_field_selector(selector)
