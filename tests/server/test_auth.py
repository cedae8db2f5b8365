"""Bearer-token authentication: 401 without the token, public health and version endpoints."""

from __future__ import annotations

from serverkit import LiveServer


def test_request_without_a_token_is_a_401_status(server: LiveServer) -> None:
    with server.client(token=None) as anonymous:
        response = anonymous.get("/api/v1/namespaces/default/pods")
    assert response.status_code == 401
    assert (response.json()["kind"], response.json()["reason"]) == ("Status", "Unauthorized")


def test_request_with_a_wrong_token_is_a_401(server: LiveServer) -> None:
    with server.client(token="wrong") as client:
        assert client.get("/api").status_code == 401


def test_health_and_version_are_public(server: LiveServer) -> None:
    with server.client(token=None) as anonymous:
        for path in ("/healthz", "/livez", "/readyz", "/version"):
            assert anonymous.get(path).status_code == 200


def test_discovery_needs_the_token(server: LiveServer) -> None:
    with server.client(token=None) as anonymous:
        assert anonymous.get("/apis").status_code == 401


def test_request_with_the_token_is_served(server: LiveServer) -> None:
    with server.client() as client:
        assert client.get("/api/v1/namespaces").status_code == 200
