"""The REST verbs on collection, object and subresource paths of every registered kind.

Handlers turn a request into one Client call and its result into the API server's response:
status codes (201 on create), list kinds (``PodList``), Table rendering when asked, warning
headers for ``fieldValidation=Warn``, and the API server's 400s for a body that names another
namespace, name, group version or kind than the URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from kubehpc.api.errors import (
    BadRequest,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)
from kubehpc.api.registry import FieldValidation, ResourceType, VersionSpec
from kubehpc.api.shorthands import expand_request_shorthands
from kubehpc.server import logs
from kubehpc.server.http import (
    dumps,
    json_response,
    query_flag,
    query_int,
    raw_json_response,
    read_json_body,
    read_object_body,
    wants_table,
    warning_headers,
)
from kubehpc.server.tables import TableMaker, include_object, table_version
from kubehpc.server.watch import watch_response
from kubehpc.store.client import (
    Client,
    DeleteOptions,
    ListOptions,
    PatchType,
    Propagation,
    WriteOptions,
)
from kubehpc.store.home import Home

Obj = dict[str, Any]

_PATCH_TYPES = {t.value: t for t in (PatchType.JSON, PatchType.MERGE, PatchType.STRATEGIC)}


@dataclass(frozen=True)
class Target:
    """What a REST path addresses."""

    rt: ResourceType
    vs: VersionSpec
    namespace: str | None
    name: str | None = None
    subresource: str = ""

    @property
    def api_version(self) -> str:
        return self.rt.api_version(self.vs.name)

    @property
    def kind(self) -> str:
        return self.rt.kind


class ResourceHandlers:
    def __init__(self, store: Client, home: Home) -> None:
        self.store = store
        self.home = home
        self._tables: dict[tuple[str, str], TableMaker] = {}

    # --- dispatch --------------------------------------------------------------------------

    async def handle(self, request: Request, t: Target) -> Response:
        method = request.method
        if t.name is None:
            if method == "GET":
                return await self.list_or_watch(request, t)
            if t.rt.namespaced and t.namespace is None:
                raise _not_allowed(method)
            if method == "POST":
                return await self.create(request, t)
            if method == "DELETE":
                return await self.delete_collection(request, t)
        elif not t.subresource:
            if method == "GET":
                return self.get(request, t)
            if method == "PUT":
                return await self.update(request, t)
            if method == "PATCH":
                return await self.patch(request, t)
            if method == "DELETE":
                return await self.delete(request, t)
        elif t.subresource == "status" and t.rt.status_subresource:
            if method == "GET":
                return self.get(request, t)
            if method == "PUT":
                return await self.update(request, t)
            if method == "PATCH":
                return await self.patch(request, t)
        elif t.subresource == "log" and t.rt.key == "pods":
            if method == "GET":
                return self.pod_log(request, t)
        else:
            what = f"{t.rt.plural}/{t.subresource}"
            raise NotFound(f"the server could not find the requested resource ({what})")
        raise _not_allowed(method)

    # --- reads -------------------------------------------------------------------------------

    def table_maker(self, t: Target) -> TableMaker:
        key = (t.rt.key, t.vs.name)
        maker = self._tables.get(key)
        if maker is None:
            maker = self._tables[key] = TableMaker(t.rt, t.vs)
        return maker

    def get(self, request: Request, t: Target) -> Response:
        assert t.name is not None
        accept = request.headers.get("accept", "")
        get_raw = getattr(self.store, "get_raw", None)
        if get_raw is not None and not wants_table(accept) and not _pretty(request):
            return raw_json_response(get_raw(t.api_version, t.kind, t.name, t.namespace))
        obj = self.store.get(t.api_version, t.kind, t.name, t.namespace)
        if wants_table(accept):
            table = self.table_maker(t).table(
                [obj],
                include_object(request.query_params.get("includeObject")),
                {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")},
                table_version(accept),
            )
            return json_response(table, pretty=_pretty(request))
        return json_response(obj, pretty=_pretty(request))

    def _list_options(self, request: Request, t: Target) -> ListOptions:
        q = request.query_params
        return ListOptions(
            namespace=t.namespace,
            label_selector=q.get("labelSelector", ""),
            field_selector=q.get("fieldSelector", ""),
            limit=query_int(q, "limit") or 0,
            continue_token=q.get("continue", ""),
            resource_version=q.get("resourceVersion", ""),
        )

    async def list_or_watch(self, request: Request, t: Target) -> Response:
        q = request.query_params
        options = self._list_options(request, t)
        accept = request.headers.get("accept", "")
        table = self.table_maker(t) if wants_table(accept) else None
        if query_flag(q.get("watch")) if "watch" in q else False:
            timeout = query_int(q, "timeoutSeconds")
            bookmarks = query_flag(q.get("allowWatchBookmarks")) if "allowWatchBookmarks" in q else False
            return watch_response(
                lambda: self._watch(t, options, bookmarks),
                float(timeout) if timeout is not None else None,
                table,
                include_object(q.get("includeObject")),
                table_version(accept),
            )
        list_raw = getattr(self.store, "list_raw", None)
        if list_raw is not None and table is None and not _pretty(request):
            return raw_json_response(list_raw(t.api_version, t.kind, options))
        result = self.store.list(t.api_version, t.kind, options)
        meta: Obj = {"resourceVersion": result.resource_version}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining_item_count is not None:
            meta["remainingItemCount"] = result.remaining_item_count
        if table is not None:
            include = include_object(q.get("includeObject"))
            body = table.table(result.items, include, meta, table_version(accept))
            return json_response(body, pretty=_pretty(request))
        return json_response(
            {"apiVersion": t.api_version, "kind": t.rt.list_kind, "metadata": meta, "items": result.items},
            pretty=_pretty(request),
        )

    def _watch(self, t: Target, options: ListOptions, bookmarks: bool) -> Any:
        # The embedded store's own watch type streams stored bytes (no re-encoding).
        start = getattr(self.store, "watch_store", None) or self.store.watch
        return start(t.api_version, t.kind, options, allow_bookmarks=bookmarks)

    def pod_log(self, request: Request, t: Target) -> Response:
        assert t.name is not None
        name, namespace = t.name, t.namespace
        pod = self.store.get(t.api_version, t.kind, name, namespace)
        result = logs.log_response(
            self.home,
            pod,
            request.query_params,
            logs.pod_getter(lambda: self.store.get(t.api_version, t.kind, name, namespace)),
        )
        if isinstance(result, bytes):
            return Response(result, media_type=logs.TEXT)
        return result  # type: ignore[no-any-return]

    # --- writes ------------------------------------------------------------------------------

    def _write_options(self, request: Request) -> WriteOptions:
        q = request.query_params
        return WriteOptions(
            dry_run=_dry_run(q.get("dryRun")),
            field_validation=_field_validation(q.get("fieldValidation")),
            field_manager=q.get("fieldManager", ""),
            read_only=True,  # the stored object is only encoded into the response
        )

    async def _body_object(self, request: Request, t: Target) -> Obj:
        obj = await read_object_body(request)
        if not isinstance(obj, dict):
            raise BadRequest(f"the request body must be a JSON object ({t.kind}), not {type(obj).__name__}")
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if not api_version:
            obj["apiVersion"] = t.api_version
        elif api_version != t.api_version:
            raise BadRequest(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({t.api_version})"
            )
        if not kind:
            obj["kind"] = t.kind
        elif kind != t.kind:
            raise BadRequest(f'{kind} in version "{t.vs.name}" cannot be handled as a {t.kind}')
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        elif not isinstance(meta, dict):
            raise BadRequest("metadata: must be an object")
        body_ns = meta.get("namespace")
        if t.rt.namespaced:
            if body_ns and body_ns != t.namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = t.namespace
        if t.name is not None:
            body_name = meta.get("name")
            if body_name and body_name != t.name:
                raise BadRequest(
                    f"the name of the object ({body_name}) does not match the name on the URL ({t.name})"
                )
            meta["name"] = t.name
        return obj

    def _write(self, method: str, options: WriteOptions, *args: Any, **kwargs: Any) -> tuple[Obj, list[str]]:
        """Call the store's write, with its validation warnings when it reports them
        (``<method>_result``); otherwise compute the Warn-mode warnings here."""
        with_result = getattr(self.store, f"{method}_result", None)
        if with_result is not None:
            result = with_result(*args, options=options, **kwargs)
            return result.object, list(result.warnings)
        obj = getattr(self.store, method)(*args, options=options, **kwargs)
        return obj, []

    def _written(self, request: Request, obj: Obj, warnings: list[str], status: int) -> Response:
        return raw_json_response(dumps(obj, _pretty(request)), status, headers=warning_headers(warnings))

    async def create(self, request: Request, t: Target) -> Response:
        obj = await self._body_object(request, t)
        # Manifests copied from articles (the seed's MPIJob, its abbreviated ClusterQueues) run
        # as written through kubectl too, with a warning naming each rewrite.
        read_as = expand_request_shorthands(obj)
        options = self._write_options(request)
        stored, warnings = self._write("create", options, obj)
        return self._written(request, stored, read_as + warnings, 201)

    async def update(self, request: Request, t: Target) -> Response:
        obj = await self._body_object(request, t)
        read_as = [] if t.subresource else expand_request_shorthands(obj)
        options = self._write_options(request)
        method = "update_status" if t.subresource == "status" else "update"
        stored, warnings = self._write(method, options, obj)
        return self._written(request, stored, read_as + warnings, 200)

    async def patch(self, request: Request, t: Target) -> Response:
        assert t.name is not None
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == PatchType.APPLY.value:
            raise UnsupportedMediaType(
                "server-side apply (application/apply-patch+yaml) is not supported by kubehpc; "
                "use client-side apply (kubectl apply without --server-side)"
            )
        patch_type = _PATCH_TYPES.get(content_type)
        if patch_type is None:
            raise UnsupportedMediaType(
                f'the body of the request was in an unknown format "{content_type}" - accepted media types '
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/strategic-merge-patch+json"
            )
        patch = await read_json_body(request, "patch")
        options = self._write_options(request)
        stored, warnings = self._write(
            "patch",
            options,
            t.api_version,
            t.kind,
            t.name,
            patch,
            patch_type,
            namespace=t.namespace,
            subresource=t.subresource,
        )
        return self._written(request, stored, warnings, 200)

    async def _delete_options(self, request: Request) -> DeleteOptions:
        q = request.query_params
        body: Obj = {}
        raw = await request.body()
        if raw.strip():
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise BadRequest(f"the DeleteOptions body is not valid JSON: {exc}") from None
            if not isinstance(body, dict):
                raise BadRequest("the DeleteOptions body must be a JSON object")
        policy = q.get("propagationPolicy") or body.get("propagationPolicy")
        orphan = q.get("orphanDependents")
        orphan_flag = body.get("orphanDependents") if orphan is None else query_flag(orphan)
        if policy is None and orphan_flag is not None:
            policy = Propagation.ORPHAN.value if orphan_flag else Propagation.BACKGROUND.value
        propagation = None
        if policy is not None:
            try:
                propagation = Propagation(policy)
            except ValueError:
                raise BadRequest(
                    f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                    '"Foreground", "Background", "Orphan"'
                ) from None
        grace = query_int(q, "gracePeriodSeconds")
        if grace is None and body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        pre = body.get("preconditions") or {}
        dry = q.get("dryRun")
        if dry is None and body.get("dryRun"):
            dry = ",".join(body["dryRun"])
        return DeleteOptions(
            propagation_policy=propagation,
            grace_period_seconds=grace,
            preconditions_uid=pre.get("uid") or "",
            preconditions_resource_version=pre.get("resourceVersion") or "",
            dry_run=_dry_run(dry),
        )

    async def delete(self, request: Request, t: Target) -> Response:
        assert t.name is not None
        options = await self._delete_options(request)
        obj = self.store.delete(t.api_version, t.kind, t.name, t.namespace, options)
        meta = obj.get("metadata", {})
        # Still there (finalizers, foreground deletion): 202 as the API server answers then.
        status = 202 if meta.get("deletionTimestamp") and _still_present(self.store, t) else 200
        return json_response(obj, status, pretty=_pretty(request))

    async def delete_collection(self, request: Request, t: Target) -> Response:
        options = await self._delete_options(request)
        listed = self.store.list(t.api_version, t.kind, self._list_options(request, t))
        deleted = []
        for obj in listed.items:
            meta = obj.get("metadata", {})
            try:
                name, namespace = meta.get("name", ""), meta.get("namespace")
                deleted.append(self.store.delete(t.api_version, t.kind, name, namespace, options))
            except NotFound:
                continue  # deleted concurrently: what the caller wanted anyway
        body = {
            "apiVersion": t.api_version,
            "kind": t.rt.list_kind,
            "metadata": {"resourceVersion": listed.resource_version},
            "items": deleted,
        }
        return json_response(body, pretty=_pretty(request))


def _still_present(store: Client, t: Target) -> bool:
    assert t.name is not None
    try:
        store.get(t.api_version, t.kind, t.name, t.namespace)
    except NotFound:
        return False
    return True


def _pretty(request: Request) -> bool:
    value = request.query_params.get("pretty")
    return value is not None and value.lower() in ("1", "true")


def _dry_run(value: str | None) -> bool:
    if value is None or value == "":
        return False
    for part in value.split(","):
        if part != "All":
            raise BadRequest(f'dryRun: Unsupported value: "{part}": supported values: "All"')
    return True


def _field_validation(value: str | None) -> str:
    # The API server's default when the parameter is absent is Warn (kubectl sends Strict).
    if value is None or value == "":
        return FieldValidation.WARN.value
    for mode in FieldValidation:
        if value.lower() == mode.value.lower():
            return mode.value
    raise BadRequest(
        f'fieldValidation: Unsupported value: "{value}": supported values: "Ignore", "Warn", "Strict"'
    )


def _not_allowed(method: str) -> MethodNotAllowed:
    return MethodNotAllowed(f"the server does not allow this method on the requested resource ({method})")
