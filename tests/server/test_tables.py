"""Server-side printing: meta.k8s.io Tables for kubectl get."""

from __future__ import annotations

import httpx
import pytest
from serverkit import pod

from kubehpc.api.registry import FieldValidation, ResourceType, VersionSpec
from kubehpc.server.tables import TableMaker, human_duration, json_path_value

TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (200, "3m20s"),
        (600, "10m"),
        (4 * 3600, "4h"),
        (5 * 3600 + 120, "5h2m"),
        (30 * 3600, "30h"),
        (2 * 86400, "2d"),
        (3 * 86400 + 3600 * 5, "3d5h"),
        (400 * 86400, "400d"),
        (800 * 86400, "2y70d"),
        (-5, "<invalid>"),
    ],
)
def test_ages_render_like_the_api_server(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_list_as_table_has_column_definitions_and_rows(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    table = http.get(PODS, headers={"Accept": TABLE}).json()
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][:3] == ["a", "0/1", "Pending"] and row["cells"][4].endswith("s")
    assert (
        row["object"]["kind"] == "PartialObjectMetadata"
        and row["object"]["metadata"]["namespace"] == "default"
    )


def test_wide_columns_have_a_priority(http: httpx.Client) -> None:
    table = http.get(PODS, headers={"Accept": TABLE}).json()
    priorities = {c["name"]: c["priority"] for c in table["columnDefinitions"]}
    assert priorities["Status"] == 0 and priorities["Node"] == 1


def test_get_as_table_has_one_row(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    table = http.get(f"{PODS}/a", headers={"Accept": TABLE}).json()
    assert len(table["rows"]) == 1


def test_include_object_none_leaves_rows_without_objects(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    table = http.get(PODS, params={"includeObject": "None"}, headers={"Accept": TABLE}).json()
    assert "object" not in table["rows"][0]


def test_include_object_object_embeds_the_full_object(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    table = http.get(PODS, params={"includeObject": "Object"}, headers={"Accept": TABLE}).json()
    assert table["rows"][0]["object"]["kind"] == "Pod"


def test_v1beta1_table_is_served_when_asked_first(http: httpx.Client) -> None:
    accept = "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    assert http.get(PODS, headers={"Accept": accept}).json()["apiVersion"] == "meta.k8s.io/v1beta1"


def test_plain_json_when_no_table_is_asked(http: httpx.Client) -> None:
    assert http.get(PODS, headers={"Accept": "application/json"}).json()["kind"] == "PodList"


def test_kind_without_printer_columns_gets_name_and_age() -> None:
    spec = VersionSpec("v1", validate=lambda obj, mode=FieldValidation.STRICT, **_: [])
    rt = ResourceType("example.com", "Widget", "widgets", True, (spec,), "v1")
    maker = TableMaker(rt, spec)
    assert [d["name"] for d in maker.definitions] == ["Name", "Age"]


def test_json_path_cells_follow_filters_and_indexes() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "B", "status": "True"}]}}
    assert json_path_value(obj, '.status.conditions[?(@.type=="B")].status') == "True"
    assert json_path_value(obj, ".status.conditions[0].type") == "A"
    assert json_path_value(obj, ".spec.missing") is None
