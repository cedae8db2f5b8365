"""kubectl's JSONPath templates, as ``-o jsonpath=`` and ``wait --for=jsonpath`` use them."""

from __future__ import annotations

import pytest

from kubehpc.cli.jsonpath import JsonPathError, render

POD_LIST = {
    "items": [
        {
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web"}},
            "status": {"phase": "Running"},
        },
        {"metadata": {"name": "b", "labels": {}}, "status": {"phase": "Pending"}},
    ]
}


def test_a_field_path_prints_the_value() -> None:
    assert render("{.items[0].status.phase}", POD_LIST) == "Running"


def test_a_wildcard_joins_values_with_spaces() -> None:
    assert render("{.items[*].metadata.name}", POD_LIST) == "a b"


def test_range_repeats_the_body_per_item_with_literals() -> None:
    assert (
        render('{range .items[*]}{.metadata.name}={.status.phase}{"\\n"}{end}', POD_LIST)
        == "a=Running\nb=Pending\n"
    )


def test_escaped_dots_address_label_keys() -> None:
    assert render("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", POD_LIST) == "web"


def test_a_filter_selects_matching_items() -> None:
    assert render('{.items[?(@.status.phase=="Pending")].metadata.name}', POD_LIST) == "b"


def test_a_missing_field_prints_nothing() -> None:
    assert render("{.items[0].spec.nodeName}", POD_LIST) == ""


def test_maps_print_as_json() -> None:
    assert render("{.items[0].status}", POD_LIST) == '{"phase":"Running"}'


def test_an_index_out_of_range_is_an_error() -> None:
    with pytest.raises(JsonPathError):
        render("{.items[5]}", POD_LIST)
