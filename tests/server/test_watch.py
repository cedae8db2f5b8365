"""?watch=1: chunked JSON events, one per line, from a resourceVersion; 410 as an ERROR event."""

from __future__ import annotations

import json

import httpx
from serverkit import LiveServer, pod

PODS = "/api/v1/namespaces/default/pods"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def events(http: httpx.Client, params: dict, headers: dict | None = None, limit: int = 100) -> list[dict]:
    out = []
    with http.stream("GET", PODS, params={"watch": "1", **params}, headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        for line in response.iter_lines():
            if line:
                out.append(json.loads(line))
            if len(out) == limit:
                break
    return out


def test_watch_from_a_version_delivers_later_changes_in_order(http: httpx.Client) -> None:
    rv = http.post(PODS, json=pod("a")).json()["metadata"]["resourceVersion"]
    http.post(PODS, json=pod("b"))
    http.patch(
        f"{PODS}/a",
        content=b'{"metadata":{"labels":{"x":"1"}}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    http.delete(f"{PODS}/b")
    got = events(http, {"resourceVersion": rv, "timeoutSeconds": "5"}, limit=3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]


def test_watch_without_a_version_starts_with_the_current_objects(http: httpx.Client) -> None:
    http.post(PODS, json=pod("a"))
    got = events(http, {"timeoutSeconds": "5"}, limit=1)
    assert got[0]["type"] == "ADDED" and got[0]["object"]["metadata"]["name"] == "a"


def test_watch_ends_after_timeout_seconds(http: httpx.Client) -> None:
    assert events(http, {"timeoutSeconds": "1", "resourceVersion": "1"}) == []


def test_watch_from_a_compacted_version_is_a_410_error_event(server: LiveServer, http: httpx.Client) -> None:
    for i in range(3):
        http.post(PODS, json=pod(f"p{i}"))
    server.store._memory_floor = server.store._durable_floor = 10**6  # history compacted away
    got = events(http, {"resourceVersion": "2", "timeoutSeconds": "5"})
    assert len(got) == 1 and got[0]["type"] == "ERROR"
    assert (got[0]["object"]["code"], got[0]["object"]["reason"]) == (410, "Expired")


def test_watch_filters_by_label_selector(http: httpx.Client) -> None:
    rv = http.get(PODS).json()["metadata"]["resourceVersion"]
    http.post(PODS, json=pod("a", labels={"app": "x"}))
    http.post(PODS, json=pod("b", labels={"app": "y"}))
    got = events(http, {"resourceVersion": rv, "labelSelector": "app=y", "timeoutSeconds": "5"}, limit=1)
    assert got[0]["object"]["metadata"]["name"] == "b"


def test_table_watch_sends_one_row_tables(http: httpx.Client) -> None:
    rv = http.get(PODS).json()["metadata"]["resourceVersion"]
    http.post(PODS, json=pod("a"))
    http.post(PODS, json=pod("b"))
    got = events(http, {"resourceVersion": rv, "timeoutSeconds": "5"}, {"Accept": TABLE}, limit=2)
    first, second = (e["object"] for e in got)
    assert first["kind"] == "Table" and first["rows"][0]["cells"][0] == "a"
    assert first["columnDefinitions"][0]["name"] == "Name"
    assert second["rows"][0]["cells"][0] == "b" and len(second["rows"]) == 1


def test_watch_bookmarks_carry_the_resource_version(server: LiveServer, http: httpx.Client) -> None:
    server.store._bookmark_interval = 0.2
    rv = http.get(PODS).json()["metadata"]["resourceVersion"]
    got = events(http, {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3"}, limit=1)
    assert got[0]["type"] == "BOOKMARK" and got[0]["object"]["metadata"]["resourceVersion"]
