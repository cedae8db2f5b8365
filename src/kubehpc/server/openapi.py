"""OpenAPI v3 documents (/openapi/v3 and one document per group version).

kubectl reads them for two decisions, so their shape matters more than their completeness:

* server-side field validation: kubectl (``--validate=strict``, the default) looks, per kind,
  for a PATCH operation tagged ``x-kubernetes-group-version-kind`` whose parameters include
  ``fieldValidation``. Found: it sends ``fieldValidation=Strict`` and leaves validation to us.
  Not found, it falls back to client-side validation with /openapi/v2, which we do not serve
  (a 404 there makes ``kubectl apply`` fail), so every served kind must have that operation.
* kinds the server does not serve: kubectl finds no v3 document for their group version and
  asks /openapi/v2 instead; it must get an answer, or ``kubectl apply`` stops at "failed to
  download openapi" instead of saying, as against any API server, that no such kind exists.
  /openapi/v2 is therefore a document without definitions (protobuf, as kubectl asks for it,
  or JSON): kubectl finds nothing to validate there and goes on to its mapping error.
* client-side apply: when the PATCH operation accepts strategic-merge-patch+json, kubectl
  computes a strategic merge patch from the kind's component schema (matched by its
  ``x-kubernetes-group-version-kind``); otherwise it sends a JSON merge patch, as for custom
  resources. Only kinds with strategic merge metadata advertise it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from kubehpc.api.registry import Registry, ResourceType, VersionSpec
from kubehpc.server.discovery import GIT_VERSION
from kubehpc.server.http import dumps

_REF = "#/components/schemas/"
_FREE_FORM = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _query(name: str, description: str, type_: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_}}


_WRITE_PARAMS = [
    _query("dryRun", "When present, indicates that modifications should not be persisted (All)."),
    _query("fieldManager", "A name associated with the actor or entity that is making these changes."),
    _query(
        "fieldValidation",
        "How the server treats unknown or duplicate fields in the request: Ignore, Warn or Strict.",
    ),
]
_LIST_PARAMS = [
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _query("limit", "Maximum number of responses to return for a list call.", "integer"),
    _query("continue", "The continue token from a previous paginated list call."),
    _query("resourceVersion", "Shows changes that occur after that particular version of a resource."),
    _query("watch", "Watch for changes to the described resources.", "boolean"),
    _query("allowWatchBookmarks", "Requests watch events with type BOOKMARK.", "boolean"),
    _query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
]
_NAME_PARAM = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
_NAMESPACE_PARAM = {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}


def _reversed_group(group: str) -> str:
    return ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"


def _refs(schema: Any) -> Iterable[str]:
    if isinstance(schema, Mapping):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
                yield value.removeprefix(_REF)
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _refs(item)


def _kind_component(
    rt: ResourceType, vs: VersionSpec, library: Mapping[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """The component name of a kind's schema, and the schema when it is not a library one."""
    gvk = {"group": rt.group, "version": vs.name, "kind": rt.kind}
    schema = vs.openapi_schema
    if schema is not None and set(schema) == {"$ref"}:
        name = str(schema["$ref"]).removeprefix(_REF)
        if name in library:
            return name, None
    name = f"{_reversed_group(rt.group)}.{vs.name}.{rt.kind}"
    if name in library and schema is None:
        return name, None
    own = dict(schema) if schema is not None else dict(_FREE_FORM)
    own.setdefault("x-kubernetes-group-version-kind", [gvk])
    return name, own


def _content(component: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF + component}}}


def _operations(rt: ResourceType, vs: VersionSpec, component: str, prefix: str) -> dict[str, dict[str, Any]]:
    gvk = {"group": rt.group, "version": vs.name, "kind": rt.kind}
    kind_ops = {"x-kubernetes-group-version-kind": gvk}
    ok = {"200": {"description": "OK", "content": _content(component)}}
    patch_types = ["application/json-patch+json", "application/merge-patch+json"]
    if vs.patch_meta is not None:
        patch_types.append("application/strategic-merge-patch+json")
    patch_body = {"content": {t: {"schema": {"type": "object"}} for t in patch_types}, "required": True}
    object_params = [_NAME_PARAM, *([_NAMESPACE_PARAM] if rt.namespaced else [])]
    collection_params = [_NAMESPACE_PARAM] if rt.namespaced else []

    def op(action: str, verb: str, params: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "operationId": f"{verb}{rt.kind}",
            "parameters": params,
            "responses": ok,
            "x-kubernetes-action": action,
            **kind_ops,
            **extra,
        }

    collection = f"{prefix}/{rt.plural}"
    item = f"{collection}/{{name}}"
    paths = {
        collection: {
            "get": op("list", "list", [*collection_params, *_LIST_PARAMS]),
            "post": op("post", "create", [*collection_params, *_WRITE_PARAMS], requestBody=_body(component)),
            "delete": op("deletecollection", "deleteCollection", [*collection_params, *_LIST_PARAMS]),
        },
        item: {
            "get": op("get", "read", object_params),
            "put": op("put", "replace", [*object_params, *_WRITE_PARAMS], requestBody=_body(component)),
            "patch": op("patch", "patch", [*object_params, *_WRITE_PARAMS], requestBody=patch_body),
            "delete": op("delete", "delete", object_params),
        },
    }
    if rt.status_subresource:
        paths[f"{item}/status"] = {
            "get": op("get", "read", object_params),
            "put": op("put", "replace", [*object_params, *_WRITE_PARAMS], requestBody=_body(component)),
            "patch": op("patch", "patch", [*object_params, *_WRITE_PARAMS], requestBody=patch_body),
        }
    return paths


def _body(component: str) -> dict[str, Any]:
    return {"content": _content(component), "required": True}


def group_version_document(
    registry: Registry, group: str, version: str, library: Mapping[str, Any]
) -> dict[str, Any]:
    """The OpenAPI v3 document of one group version; ``library`` holds shared components."""
    base = f"/apis/{group}/{version}" if group else "/api/v1"
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {}
    for rt in registry:
        if rt.group != group:
            continue
        for vs in rt.versions:
            if vs.name != version:
                continue
            name, own = _kind_component(rt, vs, library)
            if own is not None:
                components[name] = own
            else:
                components[name] = library[name]
            prefix = f"{base}/namespaces/{{namespace}}" if rt.namespaced else base
            paths.update(_operations(rt, vs, name, prefix))
    todo = [ref for schema in components.values() for ref in _refs(schema)]
    while todo:
        ref = todo.pop()
        if ref in components or ref not in library:
            continue
        components[ref] = library[ref]
        todo.extend(_refs(library[ref]))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": components},
    }


def _library() -> Mapping[str, Any]:
    try:
        from kubehpc.api.schema import openapi_components
    except ImportError:  # the schema module is optional for registries of custom kinds only
        return {}
    return openapi_components()


class OpenAPIDocuments:
    """/openapi/v3 and its group-version documents, built on first request and kept as bytes."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._docs: dict[str, bytes] = {}
        self._index: bytes | None = None

    @staticmethod
    def _key(group: str, version: str) -> str:
        return f"apis/{group}/{version}" if group else f"api/{version}"

    def document(self, key: str) -> bytes | None:
        """The document of ``api/v1`` or ``apis/<group>/<version>``; None when not served."""
        if key not in self._docs:
            targets = {
                self._key(g, v): (g, v) for g, versions in self.registry.groups().items() for v in versions
            }
            if key not in targets:
                return None
            group, version = targets[key]
            self._docs[key] = dumps(group_version_document(self.registry, group, version, _library()))
        return self._docs[key]

    def index(self) -> bytes:
        if self._index is None:
            paths = {}
            for group, versions in sorted(self.registry.groups().items()):
                for version in versions:
                    key = self._key(group, version)
                    doc = self.document(key)
                    assert doc is not None
                    digest = hashlib.sha512(doc).hexdigest().upper()
                    paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
            self._index = dumps({"paths": paths})
        return self._index


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The protobuf media type of /openapi/v2 as the API server answers it. Clients still ask with
an ``@`` before the version, which Go's media-type parser refuses in a Content-Type."""
V2_PROTOBUF_ASKED = (
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
)


def _proto_string(field: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2); our strings and messages are short."""
    assert len(value) < 128
    return bytes([field << 3 | 2, len(value)]) + value


def openapi_v2(title: str, version: str, protobuf: bool) -> bytes:
    """The empty Swagger 2.0 document: gnostic's ``openapi_v2.Document`` (``swagger`` = 1,
    ``info`` = 2, within it ``title`` = 1, ``version`` = 2) when ``protobuf``, else JSON."""
    if protobuf:
        info = _proto_string(1, title.encode()) + _proto_string(2, version.encode())
        return _proto_string(1, b"2.0") + _proto_string(2, info)
    doc = {"swagger": "2.0", "info": {"title": title, "version": version}, "paths": {}, "definitions": {}}
    return dumps(doc)
