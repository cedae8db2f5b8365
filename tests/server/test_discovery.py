"""Discovery and OpenAPI documents, shaped as the Kubernetes API server shapes them."""

from __future__ import annotations

import httpx

from kubehpc.server.http import DISCOVERY_V2
from kubehpc.server.openapi import V2_PROTOBUF

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def test_version_reports_a_kubernetes_git_version(http: httpx.Client) -> None:
    body = http.get("/version").json()
    assert body["major"] == "1" and body["gitVersion"].startswith(f"v1.{body['minor']}.")


def test_health_endpoints_answer_ok(http: httpx.Client) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        response = http.get(path)
        assert (response.status_code, response.text) == (200, "ok")


def test_api_lists_the_core_version(http: httpx.Client) -> None:
    body = http.get("/api").json()
    assert body["kind"] == "APIVersions" and body["versions"] == ["v1"]


def test_apis_lists_named_groups_with_their_preferred_version(http: httpx.Client) -> None:
    groups = {g["name"]: g for g in http.get("/apis").json()["groups"]}
    assert groups["batch"]["preferredVersion"] == {"groupVersion": "batch/v1", "version": "v1"}
    assert "" not in groups


def test_core_resource_list_includes_status_and_log_subresources(http: httpx.Client) -> None:
    resources = {r["name"]: r for r in http.get("/api/v1").json()["resources"]}
    pods = resources["pods"]
    assert (pods["kind"], pods["namespaced"], pods["singularName"]) == ("Pod", True, "pod")
    assert "watch" in pods["verbs"] and "po" in pods["shortNames"]
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["pods/log"]["verbs"] == ["get"]
    assert resources["namespaces"]["namespaced"] is False


def test_named_group_version_lists_its_kinds(http: httpx.Client) -> None:
    body = http.get("/apis/batch/v1").json()
    names = {r["name"] for r in body["resources"]}
    assert body["groupVersion"] == "batch/v1" and {"jobs", "jobs/status"} <= names


def test_aggregated_discovery_is_served_with_its_content_type(http: httpx.Client) -> None:
    response = http.get("/apis", headers={"Accept": AGGREGATED_ACCEPT})
    assert response.headers["content-type"] == DISCOVERY_V2
    body = response.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    batch = next(item for item in body["items"] if item["metadata"].get("name") == "batch")
    jobs = next(r for r in batch["versions"][0]["resources"] if r["resource"] == "jobs")
    assert jobs["scope"] == "Namespaced" and jobs["subresources"][0]["subresource"] == "status"


def test_aggregated_core_discovery_has_one_unnamed_group(http: httpx.Client) -> None:
    body = http.get("/api", headers={"Accept": AGGREGATED_ACCEPT}).json()
    assert len(body["items"]) == 1 and "name" not in body["items"][0]["metadata"]


def test_unknown_group_version_is_404(http: httpx.Client) -> None:
    assert http.get("/apis/nosuch.example.com/v1").status_code == 404


def test_openapi_v2_is_an_empty_document_in_protobuf_or_json(http: httpx.Client) -> None:
    # kubectl asks for it only for kinds without a v3 document, in protobuf.
    pb = http.get(
        "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    )
    assert pb.headers["content-type"].startswith(V2_PROTOBUF)
    assert pb.content.startswith(b"\x0a\x032.0\x12")  # swagger = "2.0", then info
    assert b"kubehpc" in pb.content
    doc = http.get("/openapi/v2").json()
    assert doc["swagger"] == "2.0" and doc["definitions"] == {} and doc["paths"] == {}


def test_openapi_v3_index_points_at_every_group_version(http: httpx.Client) -> None:
    paths = http.get("/openapi/v3").json()["paths"]
    assert paths["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")
    assert "apis/batch/v1" in paths


def test_openapi_patch_operations_advertise_field_validation(http: httpx.Client) -> None:
    # kubectl's --validate=strict relies on this to validate on the server.
    doc = http.get("/openapi/v3/apis/batch/v1").json()
    patch = doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]


def test_openapi_document_carries_the_kind_schema(http: httpx.Client) -> None:
    doc = http.get("/openapi/v3/api/v1").json()
    schemas = doc["components"]["schemas"]
    assert any(
        {"group": "", "version": "v1", "kind": "Pod"} in s.get("x-kubernetes-group-version-kind", [])
        for s in schemas.values()
    )


def test_custom_kinds_do_not_advertise_strategic_merge_patch(http: httpx.Client) -> None:
    doc = http.get("/openapi/v3/apis/kueue.x-k8s.io/v1beta1").json()
    patches = [ops["patch"] for ops in doc["paths"].values() if "patch" in ops]
    assert patches
    assert all("application/strategic-merge-patch+json" not in p["requestBody"]["content"] for p in patches)
