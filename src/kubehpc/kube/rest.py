"""The Client protocol over HTTP, for any Kubernetes-compatible API server.

The same client talks to kubehpc's embedded control plane and to a real cluster, so it keeps
to what the Kubernetes API promises and nothing more: resources are found through discovery
(``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``), errors arrive as ``Status``
bodies and are raised again as the typed :mod:`kubehpc.api.errors`, and watches are streams of
JSON lines. Retries follow client-go's caution: a request the server never received (connection
refused) or rejected before acting on it (429) is sent again whatever its verb; other failures
(dropped connections, 5xx) are retried only for reads.
"""

from __future__ import annotations

import gc
import os
import re
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import orjson

from kubehpc.api.errors import ApiError, NotFound, ServiceUnavailable
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.managedfields import TYPED_KINDS, without_managed_fields
from kubehpc.kube.ratelimit import TokenBucket
from kubehpc.kube.wire import BUSY_S, Head, Reader, Stream, Target, error_of, send_get
from kubehpc.store.client import (
    DeleteOptions,
    ListOptions,
    Obj,
    ObjectList,
    PatchType,
    WatchEvent,
    WriteOptions,
)

if TYPE_CHECKING:
    # Imported where used: the scheduler's lists, watches and writes go over raw sockets
    # (kubehpc.kube.wire), and importing httpx is a tenth of its start-up.
    import httpx

TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
READ_VERBS = frozenset({"GET", "HEAD", "OPTIONS"})
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# Warning headers look like: 299 - "message" (RFC 7234 section 5.5).
_WARNING = re.compile(r'^\s*\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')


LARGE_BODY = 1 << 20


Cut = Callable[[bytes], bytes]
"""Takes what a reader will not read out of a body's bytes before it is decoded."""


def _cut(options: ListOptions, api_version: str, kind: str) -> Cut | None:
    if options.without_managed_fields and (api_version, kind) in TYPED_KINDS:
        return without_managed_fields
    return None


def _decode(content: bytes, cut: Cut | None = None) -> Any:
    """``content`` decoded, without what ``cut`` takes out when given (whole, should the cut
    bytes not decode); big bodies with the collector paused (:func:`decode_large`)."""
    decode = orjson.loads if len(content) < LARGE_BODY else decode_large
    if cut is not None:
        shorter = cut(content)
        if shorter is not content:
            try:
                return decode(shorter)
            except orjson.JSONDecodeError:
                pass
    return decode(content)


def decode_large(content: bytes) -> Any:
    """Decode a big body (a list of thousands of objects) with the cyclic garbage collector
    paused: the millions of new containers would otherwise set off collections that walk every
    object alive again and again — several times the cost of the decoding itself. Nothing
    decoded forms a cycle, so nothing is missed."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return orjson.loads(content)
    finally:
        if paused:
            gc.enable()


def behind_proxy(server: str) -> bool:
    """Whether the environment names a proxy for ``server``'s scheme. httpx honours it (and
    ``NO_PROXY``); the raw connections of :mod:`kubehpc.kube.wire` do not, so such a client
    sends everything through httpx."""
    scheme = "https" if server.startswith("https://") else "http"
    names = (f"{scheme}_proxy", "all_proxy")
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in names)


class ConnectionFailed(ServiceUnavailable):
    """The API server could not be reached at all (no HTTP response)."""


@dataclass(frozen=True)
class ResourceInfo:
    """One resource as discovery describes it, enough to build its REST paths."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def type_name(self) -> str:
        """kubectl's name for the kind in messages: ``job.batch``, ``pod``."""
        kind = self.kind.lower()
        return f"{kind}.{self.group}" if self.group else kind

    @property
    def group_resource(self) -> str:
        """``jobs.batch``, ``pods``: how Status messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def _parse_warning(value: str) -> str:
    m = _WARNING.match(value)
    if not m:
        return value.strip()
    return re.sub(r"\\(.)", r"\1", m.group(1))


def error_from_response(resp: httpx.Response) -> ApiError:
    """The typed error a failed response stands for (a ``Status`` body, else its code)."""
    body: Any = None
    try:
        body = orjson.loads(resp.content) if resp.content else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        body.setdefault("code", resp.status_code)
        return ApiError.from_status(body)
    text = resp.text.strip() if resp.content else ""
    return ApiError.from_status(
        {"code": resp.status_code, "message": text or f"the server responded with HTTP {resp.status_code}"}
    )


class RestWatch:
    """A watch over one streaming response: one JSON event per line.

    An ``ERROR`` event carries a ``Status``; it is raised as the typed error (``Gone`` for an
    expired resourceVersion), because a stream that reports an error ends there anyway.
    """

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._stopped = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        import httpx

        try:
            for line in self._response.iter_lines():
                if not line.strip():
                    continue
                event = orjson.loads(line)
                kind = str(event.get("type", ""))
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError.from_status(obj if isinstance(obj, dict) else {})
                yield WatchEvent(type=kind, object=obj)
        except (httpx.TransportError, httpx.StreamError):
            if not self._stopped.is_set():
                raise
        finally:
            self.stop()

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        # The sync stream is read in a worker thread, one event at a time; stop() unblocks a
        # read in progress by shutting the socket down, so cancellation never leaks a thread.
        import asyncio  # here: the scheduler's watches are synchronous

        events = iter(self)
        end = object()
        try:
            while True:
                event = await asyncio.to_thread(next, events, end)
                if event is end:
                    return
                assert isinstance(event, WatchEvent)
                yield event
        finally:
            self.stop()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._close()

    def _close(self) -> None:
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._response.close()


class StreamWatch(RestWatch):
    """The same watch read straight off its socket (:mod:`kubehpc.kube.wire`): chunks split
    into lines and decoded by orjson, without a general client's per-chunk machinery — the
    scheduler reads one event per pod it binds."""

    def __init__(self, sock: Stream, reader: Reader, head: Head, cut: Cut | None = None) -> None:
        self._sock = sock
        self._reader = reader
        self._head = head
        self._cut = cut
        """Applied to each event's bytes before decoding (what the watcher will not read)."""
        self._stopped = threading.Event()

    def _chunks(self) -> Iterator[bytes]:
        if self._head.chunked:
            while chunk := self._reader.chunk():
                yield chunk
            return
        if self._reader.buf:
            yield bytes(self._reader.buf)
            self._reader.buf.clear()
        while data := self._reader.read():
            yield data

    def __iter__(self) -> Iterator[WatchEvent]:
        loads = orjson.loads
        cut = self._cut
        pending = b""
        try:
            for chunk in self._chunks():
                if pending:
                    chunk, pending = pending + chunk, b""
                if not chunk.endswith(b"\n"):
                    chunk, _, pending = chunk.rpartition(b"\n")
                for line in chunk.split(b"\n"):
                    if not line or line.isspace():
                        continue
                    event = loads(line) if cut is None else _decode(line, cut)
                    kind = str(event.get("type", ""))
                    obj = event.get("object") or {}
                    if kind == "ERROR":
                        raise ApiError.from_status(obj if isinstance(obj, dict) else {})
                    yield WatchEvent(type=kind, object=obj)
        except (OSError, ValueError):
            if not self._stopped.is_set():
                raise
        finally:
            self.stop()

    def _close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class RestClient:
    """:class:`kubehpc.store.client.Client` over HTTP, plus the raw calls a CLI needs."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.1,
        user_agent: str = "kubehpc",
        on_warning: Callable[[str], None] | None = None,
        transport: httpx.BaseTransport | None = None,
        qps: float = 0.0,
        burst: int = 0,
        max_connections: int = 100,
    ) -> None:
        self.config = config
        # Client-side rate limit (client-go's QPS/Burst); 0: none, as for the CLI.
        self.limiter = TokenBucket(qps, burst or max(1, int(qps * 2)))
        self.retries = retries
        self.backoff = backoff
        self.on_warning = on_warning
        # The latest warnings (bounded: a long-lived controller must not accumulate them).
        self.warnings: deque[str] = deque(maxlen=1000)
        self.timeout = timeout
        self._user_agent = user_agent
        self._transport = transport
        self._max_connections = max_connections
        self._client: httpx.Client | None = None
        # Plain JSON GETs (lists, discovery) and watches go straight over sockets of their own
        # (kubehpc.kube.wire), unless a test gave its own transport or a proxy is configured.
        direct = transport is None and not behind_proxy(config.server)
        self._target = Target.of(config, user_agent) if direct else None
        self._idle: list[Reader] = []
        """Keep-alive connections of the raw GETs, each with its reader."""
        self._lock = threading.Lock()
        self._gv_cache: dict[str, list[ResourceInfo]] = {}
        self._all: list[ResourceInfo] | None = None

    # -- plumbing -------------------------------------------------------------------------

    @property
    def _http(self) -> httpx.Client:
        """The general HTTP client (writes, CLI calls), made on first use."""
        with self._lock:
            if self._client is None:
                import httpx

                config = self.config
                headers = {"User-Agent": self._user_agent, "Accept": "application/json"}
                if config.token:
                    headers["Authorization"] = f"Bearer {config.token}"
                auth = httpx.BasicAuth(config.username, config.password) if config.username else None
                self._client = httpx.Client(
                    base_url=config.server,
                    headers=headers,
                    auth=auth,
                    verify=config.ssl_context(),
                    timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                    limits=httpx.Limits(
                        max_connections=self._max_connections,
                        max_keepalive_connections=min(self._max_connections, 64),
                    ),
                    transport=self._transport,
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            idle, self._idle = self._idle, []
        if client is not None:
            client.close()
        for reader in idle:
            reader.sock.close()

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _collect_warnings(self, resp: httpx.Response) -> None:
        self._warn(resp.headers.get_list("warning"))

    def _warn(self, values: list[str] | tuple[str, ...]) -> None:
        for value in values:
            message = _parse_warning(value)
            self.warnings.append(message)
            if self.on_warning is not None:
                self.on_warning(message)

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        stream: bool = False,
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        """Send one request with retries; raise the typed error for a failure status."""
        import httpx

        hdrs = dict(headers or {})
        content: bytes | None = None
        if body is not None:
            content = orjson.dumps(body)
            hdrs["Content-Type"] = content_type
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "", False)}
        attempt = 0
        while True:
            self.limiter.acquire()
            request = self._http.build_request(
                method,
                path,
                params=clean,
                content=content,
                headers=hdrs,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
            try:
                resp = self._http.send(request, stream=stream)
            except httpx.TransportError as exc:
                never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if attempt < self.retries and (never_sent or method in READ_VERBS):
                    self._sleep(attempt, None)
                    attempt += 1
                    continue
                raise ConnectionFailed(
                    f"cannot reach the API server at {self.config.server}: {exc}"
                ) from None
            retryable = resp.status_code == 429 or (resp.status_code in RETRY_STATUS and method in READ_VERBS)
            if retryable and attempt < self.retries:
                retry_after = resp.headers.get("retry-after")
                resp.close()
                self._sleep(attempt, retry_after)
                attempt += 1
                continue
            self._collect_warnings(resp)
            if resp.status_code >= 400:
                if stream:
                    resp.read()
                    resp.close()
                raise error_from_response(resp)
            return resp

    def _raw_get(self, path: str, params: dict[str, Any] | None) -> bytes:
        """A GET of JSON on a keep-alive socket of its own (:mod:`kubehpc.kube.wire`), with
        :meth:`_send`'s retries of a read and its typed errors. The body comes back as sent,
        uncompressed: decoding a list of 10,000 pods is the scheduler's biggest start-up cost,
        and inflating it first (httpx asks for gzip) would add to it on both sides."""
        assert self._target is not None
        clean = {k: v for k, v in (params or {}).items() if v not in (None, "", False)}
        request = self._target.request("GET", f"{path}?{urlencode(clean)}" if clean else path)
        attempt = 0
        while True:
            self.limiter.acquire()
            with self._lock:
                reader = self._idle.pop() if self._idle else None
            try:
                if reader is None:
                    reader = Reader(self._target.connect(self.timeout))
                head, body = send_get(reader, request)
            except (OSError, ValueError) as exc:
                if reader is not None:
                    reader.sock.close()
                if attempt < self.retries:
                    self._sleep(attempt, None)
                    attempt += 1
                    continue
                raise ConnectionFailed(
                    f"cannot reach the API server at {self.config.server}: {exc}"
                ) from None
            if head.close:
                reader.sock.close()
            else:
                with self._lock:
                    self._idle.append(reader)
            if head.status in RETRY_STATUS and attempt < self.retries:
                self._sleep(attempt, head.retry_after)
                attempt += 1
                continue
            if head.warnings:
                self._warn(head.warnings)
            if head.status >= 400:
                raise error_of(head.status, body)
            return body

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.backoff * (2**attempt), 5.0)
        if retry_after and retry_after.isdigit():
            delay = min(float(retry_after), 10.0)
        time.sleep(delay)

    def _json(self, method: str, path: str, cut: Cut | None = None, **kwargs: Any) -> Any:
        """The answer decoded; ``cut`` first takes what the caller will not read out of its bytes."""
        if method == "GET" and self._target is not None and set(kwargs) <= {"params"}:
            content = self._raw_get(path, kwargs.get("params"))
        else:
            content = self._send(method, path, **kwargs).content
        return _decode(content, cut) if content else {}

    # -- discovery ------------------------------------------------------------------------

    def _group_version(self, api_version: str) -> list[ResourceInfo]:
        with self._lock:
            cached = self._gv_cache.get(api_version)
        if cached is not None:
            return cached
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{api_version}" if group else f"/api/{version}"
        try:
            doc = self._json("GET", path)
        except NotFound:
            doc = {"resources": []}
        infos = []
        for r in doc.get("resources") or []:
            name = str(r.get("name", ""))
            if not name or "/" in name:  # subresources (pods/log, jobs/status)
                continue
            infos.append(
                ResourceInfo(
                    group=group,
                    version=version,
                    plural=name,
                    kind=str(r.get("kind", "")),
                    namespaced=bool(r.get("namespaced", False)),
                    singular=str(r.get("singularName") or "") or str(r.get("kind", "")).lower(),
                    short_names=tuple(r.get("shortNames") or ()),
                    verbs=tuple(r.get("verbs") or ()),
                    categories=tuple(r.get("categories") or ()),
                )
            )
        with self._lock:
            self._gv_cache[api_version] = infos
        return infos

    def invalidate_discovery(self) -> None:
        with self._lock:
            self._gv_cache.clear()
            self._all = None

    def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource serving ``kind`` in ``api_version`` (discovery is refreshed once on a
        miss, so kinds added since the last look are found)."""
        for refresh in (False, True):
            if refresh:
                self.invalidate_discovery()
            for info in self._group_version(api_version):
                if info.kind == kind:
                    return info
        served = sorted({f"{i.api_version} {i.kind}" for i in self.resources()})
        raise NotFound(
            f'no matches for kind "{kind}" in version "{api_version}"; the server serves: '
            + ", ".join(served),
            kind=kind,
        )

    def resources(self) -> list[ResourceInfo]:
        """Every resource the server serves, in each group's preferred version."""
        with self._lock:
            if self._all is not None:
                return self._all
        versions: list[str] = []
        core = self._json("GET", "/api")
        versions.extend(str(v) for v in core.get("versions") or [])
        groups = self._json("GET", "/apis")
        for g in groups.get("groups") or []:
            preferred = (g.get("preferredVersion") or {}).get("groupVersion")
            if not preferred and g.get("versions"):
                preferred = g["versions"][0].get("groupVersion")
            if preferred:
                versions.append(str(preferred))
        out: list[ResourceInfo] = []
        for gv in versions:
            out.extend(self._group_version(gv))
        with self._lock:
            self._all = out
        return out

    def resolve(self, name: str) -> ResourceInfo:
        """kubectl's resource name lookup: plural, singular, short name or kind, optionally
        qualified by group (``jobs.batch``) or version and group (``jobs.v1.batch``)."""
        for refresh in (False, True):
            if refresh:
                self.invalidate_discovery()
            found = self._match(name.lower(), self.resources())
            if found is not None:
                return found
        raise NotFound(f'the server doesn\'t have a resource type "{name}"')

    @staticmethod
    def _match(name: str, infos: list[ResourceInfo]) -> ResourceInfo | None:
        base, _, qualifier = name.partition(".")
        candidates = []
        for info in infos:
            names = {info.plural, info.singular, info.kind.lower(), *info.short_names}
            if base not in names:
                continue
            if qualifier:
                version, _, rest = qualifier.partition(".")
                if qualifier != info.group and not (version == info.version and rest == info.group):
                    continue
            candidates.append(info)
        if not candidates:
            return None
        # kubectl prefers the core group, then groups in discovery order.
        candidates.sort(key=lambda i: i.group != "")
        return candidates[0]

    # -- the Client protocol --------------------------------------------------------------

    def _ns(self, info: ResourceInfo, namespace: str | None) -> str | None:
        if not info.namespaced:
            return None
        return namespace or self.config.namespace

    @staticmethod
    def _write_params(options: WriteOptions | None) -> dict[str, Any]:
        o = options or WriteOptions()
        return {
            "dryRun": "All" if o.dry_run else None,
            "fieldValidation": o.field_validation or None,
            "fieldManager": o.field_manager or None,
        }

    @staticmethod
    def _list_params(options: ListOptions) -> dict[str, Any]:
        return {
            "labelSelector": options.label_selector,
            "fieldSelector": options.field_selector,
            "limit": options.limit or None,
            "continue": options.continue_token,
            "resourceVersion": options.resource_version,
        }

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, read_only: bool = False
    ) -> Obj:
        # ``read_only`` changes nothing here: every answer is decoded afresh.
        info = self.resource_for(api_version, kind)
        result: Obj = self._json("GET", info.path(self._ns(info, namespace), name))
        return result

    def list(self, api_version: str, kind: str, options: ListOptions | None = None) -> ObjectList:
        o = options or ListOptions()
        info = self.resource_for(api_version, kind)
        doc = self._json(
            "GET", info.path(o.namespace), cut=_cut(o, api_version, kind), params=self._list_params(o)
        )
        meta = doc.get("metadata") or {}
        return ObjectList(
            items=list(doc.get("items") or []),
            resource_version=str(meta.get("resourceVersion", "")),
            continue_token=str(meta.get("continue", "") or ""),
            remaining_item_count=meta.get("remainingItemCount"),
            api_version=str(doc.get("apiVersion", api_version)),
            kind=str(doc.get("kind", info.kind + "List")),
        )

    def watch(
        self,
        api_version: str,
        kind: str,
        options: ListOptions | None = None,
        allow_bookmarks: bool = False,
    ) -> RestWatch:
        o = options or ListOptions()
        info = self.resource_for(api_version, kind)
        params = self._list_params(o)
        params.update(watch="true", allowWatchBookmarks="true" if allow_bookmarks else None)
        if self._target is not None:
            return self._stream_watch(info.path(o.namespace), params, _cut(o, api_version, kind))
        return self.watch_path(info.path(o.namespace), params)

    def watch_path(
        self, path: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> RestWatch:
        """Open a watch stream on any path (``?watch=true`` must be in ``params``)."""
        if self._target is not None and headers is None:
            return self._stream_watch(path, params)
        resp = self._send(
            "GET",
            path,
            params=params,
            headers=headers,
            stream=True,
            timeout=_unbounded_read(),
        )
        return RestWatch(resp)

    def _stream_watch(self, path: str, params: dict[str, Any], cut: Cut | None = None) -> StreamWatch:
        """A GET that streams, with :meth:`_send`'s retries of a read (connection failures,
        429 and 5xx) and its typed errors."""
        assert self._target is not None
        clean = {k: v for k, v in params.items() if v not in (None, "", False)}
        request = self._target.request("GET", f"{path}?{urlencode(clean)}" if clean else path)
        attempt = 0
        while True:
            self.limiter.acquire()
            sock = None
            try:
                sock = self._target.connect(None)
                sock.sendall(request)
                reader = Reader(sock, coalesce_s=BUSY_S)
                head = reader.head()
                if head.status < 400:
                    return StreamWatch(sock, reader, head, cut)
                body = reader.body(head) if head.status != 429 else b""
            except (OSError, ValueError) as exc:
                if sock is not None:
                    sock.close()
                if attempt < self.retries:
                    self._sleep(attempt, None)
                    attempt += 1
                    continue
                raise ConnectionFailed(
                    f"cannot reach the API server at {self.config.server}: {exc}"
                ) from None
            sock.close()
            if head.status in RETRY_STATUS and attempt < self.retries:
                self._sleep(attempt, head.retry_after)
                attempt += 1
                continue
            raise error_of(head.status, body)

    def _object_info(self, obj: Obj) -> tuple[ResourceInfo, str | None, str]:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        if not api_version or not kind:
            raise ApiError.from_status({"code": 400, "message": "object has no apiVersion or kind"})
        info = self.resource_for(api_version, kind)
        meta = obj.get("metadata") or {}
        return info, self._ns(info, meta.get("namespace")), str(meta.get("name", ""))

    def create(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        info, namespace, _ = self._object_info(obj)
        result: Obj = self._json("POST", info.path(namespace), params=self._write_params(options), body=obj)
        return result

    def update(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        info, namespace, name = self._object_info(obj)
        path = info.path(namespace, name)
        result: Obj = self._json("PUT", path, params=self._write_params(options), body=obj)
        return result

    def update_status(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        info, namespace, name = self._object_info(obj)
        path = info.path(namespace, name, "status")
        result: Obj = self._json("PUT", path, params=self._write_params(options), body=obj)
        return result

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> Obj:
        info = self.resource_for(api_version, kind)
        path = info.path(self._ns(info, namespace), name, subresource)
        result: Obj = self._json(
            "PATCH", path, params=self._write_params(options), body=patch, content_type=str(patch_type)
        )
        return result

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Obj:
        info = self.resource_for(api_version, kind)
        o = options or DeleteOptions()
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if o.propagation_policy is not None:
            body["propagationPolicy"] = str(o.propagation_policy)
        if o.grace_period_seconds is not None:
            body["gracePeriodSeconds"] = o.grace_period_seconds
        preconditions = {}
        if o.preconditions_uid:
            preconditions["uid"] = o.preconditions_uid
        if o.preconditions_resource_version:
            preconditions["resourceVersion"] = o.preconditions_resource_version
        if preconditions:
            body["preconditions"] = preconditions
        if o.dry_run:
            body["dryRun"] = ["All"]
        result: Obj = self._json("DELETE", info.path(self._ns(info, namespace), name), body=body)
        return result

    def delete_collection(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Delete every object of ``kind`` (in ``namespace``) with one request."""
        info = self.resource_for(api_version, kind)
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        self._send("DELETE", info.path(self._ns(info, namespace)), body=body).close()

    # -- raw calls for the command line ---------------------------------------------------

    def get_table(
        self,
        info: ResourceInfo,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        include_object: str = "Metadata",
    ) -> Obj:
        """A ``meta.k8s.io/v1 Table`` of one object or a collection (``namespace=None`` on a
        namespaced resource: every namespace)."""
        params = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "includeObject": include_object,
        }
        result: Obj = self._json(
            "GET",
            info.path(namespace, name),
            params=params if not name else {"includeObject": include_object},
            headers={"Accept": TABLE_ACCEPT},
        )
        return result

    def watch_table(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        name: str = "",
    ) -> RestWatch:
        """Watch events whose objects are Tables of one row each (kubectl get -w)."""
        params = {
            "watch": "true",
            "labelSelector": label_selector,
            "fieldSelector": field_selector or (f"metadata.name={name}" if name else ""),
            "resourceVersion": resource_version,
            "includeObject": "Metadata",
        }
        return self.watch_path(info.path(namespace), params, headers={"Accept": TABLE_ACCEPT})

    def stream_log(
        self,
        namespace: str,
        pod: str,
        container: str = "",
        follow: bool = False,
        tail_lines: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[bytes]:
        """A pod's log as raw chunks; with ``follow``, until the container ends."""
        info = ResourceInfo(group="", version="v1", plural="pods", kind="Pod", namespaced=True)
        params = {
            "container": container,
            "follow": "true" if follow else None,
            "tailLines": tail_lines,
            "previous": "true" if previous else None,
            "timestamps": "true" if timestamps else None,
        }
        resp = self._send(
            "GET",
            info.path(namespace, pod, "log"),
            params=params,
            headers={"Accept": "*/*"},
            stream=True,
            timeout=_unbounded_read() if follow else None,
        )
        try:
            yield from resp.iter_bytes()
        finally:
            resp.close()

    def raw(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET any path and decode its JSON (kubectl get --raw)."""
        return self._json("GET", path, params=params)

    def server_version(self) -> Obj:
        result: Obj = self._json("GET", "/version")
        return result

    def ready(self) -> bool:
        """Whether ``/readyz`` answers ok (one try, no retries)."""
        import httpx

        try:
            resp = self._http.get("/readyz", timeout=2.0)
        except httpx.TransportError:
            return False
        return resp.status_code == 200


def _unbounded_read() -> httpx.Timeout:
    """Streams (watches, followed logs) wait for data as long as it takes."""
    import httpx

    return httpx.Timeout(None, connect=10.0)
