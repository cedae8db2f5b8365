"""Retries and warnings of the REST client, against a scripted transport."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from kubehpc.api.errors import InternalError, TooManyRequests
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.rest import RestClient

Handler = Callable[[httpx.Request], httpx.Response]
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
CORE = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["get", "create"]}
    ],
}


def scripted(responses: list[httpx.Response]) -> tuple[RestClient, list[str]]:
    """A client whose object requests get ``responses`` in turn; returns it and the methods seen."""
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1":
            return httpx.Response(200, json=CORE)
        seen.append(request.method)
        return responses.pop(0)

    client = RestClient(
        ClientConfig(server="http://test"), transport=httpx.MockTransport(handle), backoff=0.001
    )
    return client, seen


def status(code: int, reason: str) -> httpx.Response:
    return httpx.Response(code, json={"kind": "Status", "code": code, "reason": reason, "message": reason})


def test_a_read_is_retried_after_a_5xx() -> None:
    client, seen = scripted([status(503, "ServiceUnavailable"), httpx.Response(200, json=CM)])
    assert client.get("v1", "ConfigMap", "x", "default") == CM
    assert seen == ["GET", "GET"]


def test_a_write_is_not_retried_after_a_5xx() -> None:
    client, seen = scripted([status(500, "InternalError"), httpx.Response(201, json=CM)])
    with pytest.raises(InternalError):
        client.create(CM)
    assert seen == ["POST"]


def test_a_429_is_retried_whatever_the_verb() -> None:
    client, seen = scripted([status(429, "TooManyRequests"), httpx.Response(201, json=CM)])
    assert client.create(CM) == CM
    assert seen == ["POST", "POST"]


def test_retries_give_up_with_the_last_error() -> None:
    client, seen = scripted([status(429, "TooManyRequests") for _ in range(10)])
    client.retries = 2
    with pytest.raises(TooManyRequests):
        client.create(CM)
    assert len(seen) == 3


def test_warning_headers_are_collected_and_unquoted() -> None:
    warned = httpx.Response(201, json=CM, headers={"Warning": '299 - "unknown field \\"spec.foo\\""'})
    client, _ = scripted([warned])
    client.create(CM)
    assert list(client.warnings) == ['unknown field "spec.foo"']


def test_a_failure_without_a_status_body_maps_by_http_code() -> None:
    client, _ = scripted([httpx.Response(500, text="boom")] * 10)
    with pytest.raises(InternalError, match="boom"):
        client.create(CM)
