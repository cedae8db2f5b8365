"""Lean POSTs for the scheduler's hot path: one keep-alive HTTPS connection per writer thread.

A scheduler draining a backlog writes two small objects per pod (its Binding and its
``Scheduled`` Event). Through the general client each write costs a few hundred microseconds of
Python before the bytes leave (request and response objects, header models, hooks); with
``http.client`` on a connection the thread keeps, it is the JSON encoding and the TLS record.
Everything else — retries of reads, discovery, watches — stays with :class:`RestClient`, which
also builds the paths here. A write that fails to reach the server is retried once on a fresh
connection only when it was never sent; errors come back as the same typed ApiErrors.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from typing import Any
from urllib.parse import urlsplit

import orjson

from kubehpc.api.errors import ApiError
from kubehpc.kube.rest import ConnectionFailed, RestClient
from kubehpc.store.client import Obj, WriteOptions


class LeanCreates:
    """``create`` of any object through its own connections; everything else via ``rest``."""

    def __init__(self, rest: RestClient, timeout: float = 30.0) -> None:
        self.rest = rest
        config = rest.config
        url = urlsplit(config.server)
        self._https = url.scheme == "https"
        self._host = url.hostname or "127.0.0.1"
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        verify = config.ssl_context()
        if isinstance(verify, ssl.SSLContext):
            self._ssl: ssl.SSLContext | None = verify
        elif verify is False:
            self._ssl = ssl._create_unverified_context()
        else:
            self._ssl = ssl.create_default_context()
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if config.token:
            self._headers["Authorization"] = f"Bearer {config.token}"
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=self._ssl
                )
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._local.conn = conn
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def post(self, path: str, body: bytes) -> Any:
        """POST ``body``; the decoded response, or the typed error of a failure status."""
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request("POST", self._prefix + path, body, self._headers)
            except (OSError, http.client.HTTPException) as err:
                self._drop()  # nothing reached the server: safe to send again
                if attempt == 0:
                    continue
                raise ConnectionFailed(
                    f"cannot reach the API server at {self.rest.config.server}: {err}"
                ) from None
            try:
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as err:
                self._drop()  # it may have been acted on: never resend a write
                raise ConnectionFailed(
                    f"no answer from the API server at {self.rest.config.server}: {err}"
                ) from None
            if resp.status >= 400:
                try:
                    status = orjson.loads(data) if data else {}
                except orjson.JSONDecodeError:
                    status = {}
                if not isinstance(status, dict) or status.get("kind") != "Status":
                    status = {"message": data.decode(errors="replace") or f"HTTP {resp.status}"}
                status.setdefault("code", resp.status)
                raise ApiError.from_status(status)
            return orjson.loads(data) if data else {}
        raise AssertionError("unreachable")

    def create(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        if options is not None and options != WriteOptions():
            return self.rest.create(obj, options)
        info = self.rest.resource_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        namespace = None
        if info.namespaced:
            namespace = (obj.get("metadata") or {}).get("namespace") or self.rest.config.namespace
        result: Obj = self.post(info.path(namespace), orjson.dumps(obj))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rest, name)
