"""CRUD, the status subresource and errors through HTTP, as the API server answers them."""

from __future__ import annotations

import httpx
from serverkit import LiveServer, pod

PODS = "/api/v1/namespaces/default/pods"


def create(http: httpx.Client, obj: dict, path: str = PODS) -> dict:
    response = http.post(path, json=obj)
    assert response.status_code == 201, response.text
    return response.json()


def test_create_answers_201_with_the_stored_object(http: httpx.Client) -> None:
    body = create(http, pod("a"))
    assert body["metadata"]["uid"] and body["metadata"]["resourceVersion"]


def test_get_returns_the_object(http: httpx.Client) -> None:
    create(http, pod("a"))
    assert http.get(f"{PODS}/a").json()["metadata"]["name"] == "a"


def test_missing_object_is_a_404_status(http: httpx.Client) -> None:
    response = http.get(f"{PODS}/nope")
    body = response.json()
    assert response.status_code == 404
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)
    assert body["details"]["name"] == "nope"


def test_create_fills_apiversion_and_kind_from_the_path(http: httpx.Client) -> None:
    obj = pod("a")
    del obj["apiVersion"], obj["kind"]
    assert create(http, obj)["kind"] == "Pod"


def test_create_of_an_existing_name_is_a_409(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.post(PODS, json=pod("a"))
    assert response.status_code == 409 and response.json()["reason"] == "AlreadyExists"


def test_namespace_in_body_must_match_the_path(http: httpx.Client) -> None:
    response = http.post(PODS, json=pod("a", namespace="other"))
    assert response.status_code == 400
    assert "does not match the namespace" in response.json()["message"]


def test_name_in_body_must_match_the_path_on_update(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.put(f"{PODS}/a", json=pod("b"))
    assert response.status_code == 400 and "does not match the name" in response.json()["message"]


def test_kind_in_body_must_match_the_path(http: httpx.Client) -> None:
    obj = pod("a")
    obj["kind"] = "ConfigMap"
    assert http.post(PODS, json=obj).status_code == 400


def test_invalid_object_is_a_422_naming_the_field(http: httpx.Client) -> None:
    obj = pod("a")
    obj["spec"]["containers"][0]["resources"] = {"limits": {"memory": "8Gx"}}
    response = http.post(PODS, json=obj)
    body = response.json()
    assert response.status_code == 422 and body["reason"] == "Invalid"
    assert any("resources.limits.memory" in c["field"] for c in body["details"]["causes"])


def test_unknown_field_is_a_strict_decoding_error_under_strict_validation(http: httpx.Client) -> None:
    # As the API server: refused while decoding (400), naming only the unknown fields.
    obj = pod("a")
    obj["spec"]["bogus"] = 1
    obj["spec"]["containers"][0]["imagePullPolicy"] = "Sometimes"
    response = http.post(f"{PODS}?fieldValidation=Strict", json=obj)
    body = response.json()
    assert (response.status_code, body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus"'
    )


def test_unknown_field_is_a_warning_header_under_warn_validation(http: httpx.Client) -> None:
    obj = pod("a")
    obj["spec"]["bogus"] = 1
    response = http.post(f"{PODS}?fieldValidation=Warn", json=obj)
    assert response.status_code == 201
    assert response.headers["warning"] == '299 - "unknown field \\"spec.bogus\\""'


def test_malformed_json_is_a_400(http: httpx.Client) -> None:
    response = http.post(PODS, content=b"{nope", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and response.json()["kind"] == "Status"


def test_stale_update_is_a_409_conflict(http: httpx.Client) -> None:
    created = create(http, pod("a"))
    first = dict(created, metadata={**created["metadata"], "labels": {"v": "1"}})
    assert http.put(f"{PODS}/a", json=first).status_code == 200
    stale = dict(created, metadata={**created["metadata"], "labels": {"v": "2"}})
    response = http.put(f"{PODS}/a", json=stale)
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"


def test_list_filters_by_label_selector(http: httpx.Client) -> None:
    create(http, pod("a", labels={"app": "x"}))
    create(http, pod("b", labels={"app": "y"}))
    body = http.get(PODS, params={"labelSelector": "app=x"}).json()
    assert body["kind"] == "PodList" and [p["metadata"]["name"] for p in body["items"]] == ["a"]


def test_list_filters_by_field_selector(http: httpx.Client) -> None:
    create(http, pod("a"))
    create(http, pod("b"))
    body = http.get(PODS, params={"fieldSelector": "metadata.name=b"}).json()
    assert [p["metadata"]["name"] for p in body["items"]] == ["b"]


def test_list_pages_with_limit_and_continue(http: httpx.Client) -> None:
    for name in ("a", "b", "c"):
        create(http, pod(name))
    first = http.get(PODS, params={"limit": 2}).json()
    rest = http.get(PODS, params={"limit": 2, "continue": first["metadata"]["continue"]}).json()
    names = [p["metadata"]["name"] for p in first["items"] + rest["items"]]
    assert names == ["a", "b", "c"] and "continue" not in rest["metadata"]


def test_list_across_namespaces(http: httpx.Client) -> None:
    http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    create(http, pod("a"))
    create(http, pod("b", namespace="t"), "/api/v1/namespaces/t/pods")
    names = {p["metadata"]["name"] for p in http.get("/api/v1/pods").json()["items"]}
    assert names == {"a", "b"}


def test_create_across_namespaces_is_a_405(http: httpx.Client) -> None:
    assert http.post("/api/v1/pods", json=pod("a")).status_code == 405


def test_create_in_a_missing_namespace_is_a_404(http: httpx.Client) -> None:
    response = http.post("/api/v1/namespaces/ghost/pods", json=pod("a", namespace="ghost"))
    assert response.status_code == 404


def test_cluster_scoped_kind_is_served_without_namespace(http: httpx.Client) -> None:
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "hi"},
        "value": 10,
    }
    create(http, body, "/apis/scheduling.k8s.io/v1/priorityclasses")
    assert http.get("/apis/scheduling.k8s.io/v1/priorityclasses/hi").json()["value"] == 10


def test_dry_run_create_stores_nothing(http: httpx.Client) -> None:
    assert http.post(f"{PODS}?dryRun=All", json=pod("a")).status_code == 201
    assert http.get(f"{PODS}/a").status_code == 404


def test_status_update_changes_only_status(http: httpx.Client) -> None:
    created = create(http, pod("a"))
    created["status"] = {"phase": "Running"}
    created["metadata"]["labels"] = {"ignored": "yes"}
    body = http.put(f"{PODS}/a/status", json=created).json()
    assert body["status"]["phase"] == "Running" and "ignored" not in (body["metadata"].get("labels") or {})
    assert http.get(f"{PODS}/a/status").json()["status"]["phase"] == "Running"


def test_status_patch(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.patch(
        f"{PODS}/a/status",
        content=b'{"status":{"phase":"Succeeded"}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.json()["status"]["phase"] == "Succeeded"


def test_merge_patch(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.patch(
        f"{PODS}/a",
        content=b'{"metadata":{"labels":{"x":"1"}}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.json()["metadata"]["labels"] == {"x": "1"}


def test_json_patch(http: httpx.Client) -> None:
    create(http, pod("a", labels={"x": "1"}))
    response = http.patch(
        f"{PODS}/a",
        content=b'[{"op":"replace","path":"/metadata/labels/x","value":"2"}]',
        headers={"Content-Type": "application/json-patch+json"},
    )
    assert response.json()["metadata"]["labels"] == {"x": "2"}


def test_strategic_merge_patch_merges_containers_by_name(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.patch(
        f"{PODS}/a",
        content=b'{"spec":{"containers":[{"name":"main","image":"alpine"}]}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    assert [c["image"] for c in response.json()["spec"]["containers"]] == ["alpine"]


def test_server_side_apply_is_a_415_that_says_so(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.patch(
        f"{PODS}/a", content=b"{}", headers={"Content-Type": "application/apply-patch+yaml"}
    )
    assert response.status_code == 415 and "server-side apply" in response.json()["message"]


def test_unknown_patch_type_is_a_415(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.patch(f"{PODS}/a", content=b"{}", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415


def test_yaml_body_is_accepted(http: httpx.Client) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n"
    response = http.post(
        "/api/v1/namespaces/default/configmaps", content=body, headers={"Content-Type": "application/yaml"}
    )
    assert response.status_code == 201 and response.json()["data"] == {"k": "v"}


def test_delete_returns_the_object_and_removes_it(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.delete(f"{PODS}/a")
    assert response.status_code == 200 and response.json()["metadata"]["name"] == "a"
    assert http.get(f"{PODS}/a").status_code == 404


def test_foreground_delete_keeps_the_object_with_a_finalizer(http: httpx.Client) -> None:
    create(http, pod("a"))
    response = http.request(
        "DELETE",
        f"{PODS}/a",
        json={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
    )
    assert response.status_code == 202
    meta = http.get(f"{PODS}/a").json()["metadata"]
    assert meta["deletionTimestamp"] and "foregroundDeletion" in meta["finalizers"]


def test_bad_propagation_policy_is_a_400(http: httpx.Client) -> None:
    create(http, pod("a"))
    assert http.delete(f"{PODS}/a", params={"propagationPolicy": "Sideways"}).status_code == 400


def test_delete_collection_by_label(http: httpx.Client) -> None:
    create(http, pod("a", labels={"app": "x"}))
    create(http, pod("b", labels={"app": "y"}))
    body = http.delete(PODS, params={"labelSelector": "app=x"}).json()
    assert [p["metadata"]["name"] for p in body["items"]] == ["a"]
    assert [p["metadata"]["name"] for p in http.get(PODS).json()["items"]] == ["b"]


def test_unknown_resource_is_a_404(http: httpx.Client) -> None:
    assert http.get("/api/v1/namespaces/default/widgets").status_code == 404


def test_unsupported_method_is_a_405(http: httpx.Client) -> None:
    create(http, pod("a"))
    assert http.post(f"{PODS}/a").status_code == 405


def test_pretty_output_is_indented(server: LiveServer, http: httpx.Client) -> None:
    create(http, pod("a"))
    assert http.get(f"{PODS}/a", params={"pretty": "true"}).text.startswith('{\n  "')
