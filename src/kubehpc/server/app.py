"""The ASGI application: the Kubernetes REST API over a Client (normally the embedded store).

KubeAPI parses Kubernetes paths itself: the path grammar (core vs named groups,
namespaced vs cluster-scoped, subresources) is resolved against the registry, which a table
of Starlette routes could not express without one route per kind.
"""

from __future__ import annotations

import hmac
import logging
import os
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from kubehpc.api.errors import ApiError, InternalError, NotFound, Unauthorized
from kubehpc.api.registry import Registry
from kubehpc.server.discovery import GIT_VERSION, DiscoveryDocuments, api_versions
from kubehpc.server.http import JSON, dumps, error_response, raw_json_response, wants_discovery_v2
from kubehpc.server.openapi import V2_PROTOBUF, V2_PROTOBUF_ASKED, OpenAPIDocuments, openapi_v2
from kubehpc.server.resources import ResourceHandlers, Target
from kubehpc.store.client import Client
from kubehpc.store.home import Home

log = logging.getLogger("kubehpc.server")

# Readable without a token, like the API server's system:public-info-viewer role.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
# Set to 1 to log every request (method, path, Accept, status): how one learns what kubectl asks.
TRACE_ENV = "KUBEHPC_HTTP_TRACE"


class KubeAPI:
    def __init__(
        self,
        store: Client,
        registry: Registry,
        token: str | None,
        home: Home,
        metrics: CollectorRegistry | None = None,
    ) -> None:
        self.registry = registry
        self.metrics = metrics
        self.token = token.encode() if token else None
        self.discovery = DiscoveryDocuments(registry)
        self.openapi = OpenAPIDocuments(registry)
        self.resources = ResourceHandlers(store, home)
        self.trace = os.environ.get(TRACE_ENV, "") == "1"
        # Plurals per group version, to tell /namespaces/<ns>/<plural> from a namespace's
        # subresource (/api/v1/namespaces/<name>/status).
        self._namespaced: set[tuple[str, str]] = {(rt.group, rt.plural) for rt in registry if rt.namespaced}

    async def __call__(self, request: Request) -> Response:
        start = time.perf_counter()
        try:
            response = await self.dispatch(request)
        except ApiError as err:
            response = error_response(err)
        except Exception as exc:  # a bug: answer as the API server does, and keep serving
            log.exception("internal error serving %s %s", request.method, request.url.path)
            response = error_response(InternalError(f"internal error: {exc}"))
        if self.trace:
            log.warning(
                "%s %s?%s accept=%r ctype=%r -> %s (%.1f ms)",
                request.method,
                request.url.path,
                request.url.query,
                request.headers.get("accept", ""),
                request.headers.get("content-type", ""),
                response.status_code,
                (time.perf_counter() - start) * 1000,
            )
        return response

    def authenticate(self, request: Request) -> None:
        if self.token is None or request.url.path in PUBLIC_PATHS:
            return
        header = request.headers.get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), self.token):
            raise Unauthorized("Unauthorized")

    async def dispatch(self, request: Request) -> Response:
        self.authenticate(request)
        path = request.url.path
        if path in HEALTH_PATHS or path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return PlainTextResponse("ok")
        parts = [p for p in path.split("/") if p]
        if not parts:
            raise NotFound("the server could not find the requested resource")
        head = parts[0]
        if head == "api":
            return await self._core(request, parts[1:])
        if head == "apis":
            return await self._named(request, parts[1:])
        if path == "/version":
            return raw_json_response(self.discovery.version)
        if head == "openapi":
            return self._openapi(parts[1:], request.headers.get("accept", ""))
        if path == "/metrics" and self.metrics is not None:
            # Like the API server's /metrics: authenticated, Prometheus text format.
            return Response(generate_latest(self.metrics), media_type=CONTENT_TYPE_LATEST)
        raise NotFound("the server could not find the requested resource")

    async def _core(self, request: Request, rest: list[str]) -> Response:
        if not rest:
            v2 = wants_discovery_v2(request.headers.get("accept", ""))
            if v2:
                return raw_json_response(self.discovery.aggregated(True, v2), content_type=v2)
            host = request.headers.get("host", "127.0.0.1")
            return raw_json_response(dumps(api_versions(host)))
        return await self._group_version(request, "", rest[0], rest[1:])

    async def _named(self, request: Request, rest: list[str]) -> Response:
        if not rest:
            v2 = wants_discovery_v2(request.headers.get("accept", ""))
            if v2:
                return raw_json_response(self.discovery.aggregated(False, v2), content_type=v2)
            return raw_json_response(self.discovery.apis)
        group = rest[0]
        if len(rest) == 1:
            doc = self.discovery.groups.get(group)
            if doc is None:
                raise NotFound("the server could not find the requested resource")
            return raw_json_response(doc)
        return await self._group_version(request, group, rest[1], rest[2:])

    async def _group_version(self, request: Request, group: str, version: str, rest: list[str]) -> Response:
        if not rest:
            doc = self.discovery.resource_lists.get((group, version))
            if doc is None:
                raise NotFound("the server could not find the requested resource")
            return raw_json_response(doc)
        target = self._target(group, version, rest)
        return await self.resources.handle(request, target)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, rest[2]) in self._namespaced:
            namespace = rest[1]
            rest = rest[2:]
        if len(rest) > 3:
            raise NotFound("the server could not find the requested resource")
        rt, vs = self.registry.for_resource(group, version, rest[0])
        if rt.namespaced != (namespace is not None) and not (rt.namespaced and len(rest) == 1):
            # A cluster-scoped kind under /namespaces/<ns>/, or a namespaced object without one.
            raise NotFound("the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        return Target(rt, vs, namespace, name, sub)

    def _openapi(self, rest: list[str], accept: str) -> Response:
        if rest == ["v3"]:
            return raw_json_response(self.openapi.index())
        if len(rest) > 1 and rest[0] == "v3":
            doc = self.openapi.document("/".join(rest[1:]))
            if doc is not None:
                return raw_json_response(doc)
        if rest == ["v2"]:
            # Only asked for kinds without a v3 document (see server/openapi.py): empty.
            protobuf = any(asked in accept for asked in V2_PROTOBUF_ASKED)
            body = openapi_v2("kubehpc", GIT_VERSION, protobuf)
            return raw_json_response(body, content_type=V2_PROTOBUF if protobuf else JSON)
        raise NotFound("the server could not find the requested resource")


class KubeApp:
    """The ASGI entry point: Starlette requests and responses without Starlette's router and
    middleware stack, which KubeAPI does not need (it parses paths and maps every error
    itself) and which cost a noticeable share of a write's time at thousands of requests/s."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            response = await self.api(Request(scope, receive))
            await response(scope, receive, send)
        elif scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return


def build_app(
    store: Client,
    registry: Registry,
    *,
    token: str | None,
    home: Home,
    metrics: CollectorRegistry | None = None,
) -> KubeApp:
    """The ASGI app serving ``store`` on the Kubernetes REST paths of ``registry``'s kinds
    (and ``metrics`` at /metrics)."""
    return KubeApp(KubeAPI(store, registry, token, home, metrics))
