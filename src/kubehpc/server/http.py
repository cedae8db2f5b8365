"""HTTP plumbing shared by the handlers: JSON responses, Status errors, content negotiation.

Bodies are encoded with orjson straight into ``Response`` bytes; Starlette's JSONResponse would
re-encode with the standard library, which is several times slower on the write path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import yaml
from starlette.requests import Request
from starlette.responses import Response

from kubehpc.api.errors import ApiError, BadRequest, UnsupportedMediaType
from kubehpc.server import protobuf

JSON = "application/json"

# What kubectl get sends to ask for server-side printing (v1, then the v1beta1 fallback).
_TABLE_GROUP = "meta.k8s.io"
# Aggregated discovery (kubectl >= 1.30 asks for it first on /api and /apis).
DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
DISCOVERY_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def dumps(obj: Any, pretty: bool = False) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if pretty else 0)


def json_response(
    obj: Any,
    status: int = 200,
    *,
    pretty: bool = False,
    content_type: str = JSON,
    warnings: Iterable[str] = (),
) -> Response:
    headers = warning_headers(warnings)
    return raw_json_response(dumps(obj, pretty), status, content_type=content_type, headers=headers)


def raw_json_response(
    body: bytes,
    status: int = 200,
    *,
    content_type: str = JSON,
    headers: list[tuple[str, str]] | None = None,
) -> Response:
    response = Response(body, status_code=status, media_type=content_type)
    if headers:
        for key, value in headers:
            response.headers.append(key, value)
    return response


def warning_headers(warnings: Iterable[str]) -> list[tuple[str, str]]:
    """``Warning: 299 - "text"`` headers, as the API server sends and kubectl prints."""
    out = []
    for text in warnings:
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        out.append(("Warning", f'299 - "{quoted}"'))
    return out


def error_response(err: ApiError, pretty: bool = False) -> Response:
    return json_response(err.to_status(), err.code, pretty=pretty)


def media_types(accept: str) -> list[tuple[str, dict[str, str]]]:
    """Parse an Accept header into (type, parameters) pairs, in the order given."""
    out = []
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params = {}
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            params[key.strip().lower()] = value.strip()
        out.append((pieces[0].lower(), params))
    return out


def wants_table(accept: str) -> bool:
    """True when the first acceptable representation we can serve is a meta.k8s.io Table."""
    if "as=Table" not in accept:
        return False
    for media, params in media_types(accept):
        is_table = params.get("as") == "Table" and params.get("g") == _TABLE_GROUP
        if is_table and params.get("v") in ("v1", "v1beta1"):
            return media in ("application/json", "*/*")
        if media in ("application/json", "*/*", "application/*") and "as" not in params:
            return False
    return False


def wants_discovery_v2(accept: str) -> str:
    """The aggregated discovery content type to answer with, "" for the legacy documents."""
    if "apidiscovery.k8s.io" not in accept:
        return ""
    for media, params in media_types(accept):
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            if params.get("v") == "v2":
                return DISCOVERY_V2
            if params.get("v") == "v2beta1":
                return DISCOVERY_V2BETA1
        elif media in ("application/json", "*/*") and "as" not in params:
            return ""
    return ""


async def read_json_body(request: Request, what: str = "request body") -> Any:
    body = await request.body()
    if not body:
        raise BadRequest(f"the {what} is empty")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the {what} is not valid JSON: {exc}") from None


async def read_object_body(request: Request) -> Any:
    """The object of a create/update body: JSON, YAML, or (for what kubectl sends so)
    Kubernetes protobuf."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media in ("", "application/json", "*/*"):
        return await read_json_body(request)
    body = await request.body()
    if media == protobuf.CONTENT_TYPE:
        return protobuf.decode_object(body)
    if media in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise BadRequest(f"the request body is not valid YAML: {exc}") from None
    raise UnsupportedMediaType(
        f'the body of the request was in an unknown format "{media}" - accepted media types include: '
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


def query_flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "yes", "")


def query_int(params: Any, name: str) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"invalid value for query parameter {name}: {value!r} is not an integer") from None
