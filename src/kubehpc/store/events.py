"""Recording v1 Events about objects, aggregated the way client-go's recorder does.

An event repeated for the same object with the same type, reason and message bumps ``count``
and ``lastTimestamp`` of the existing Event instead of creating a new one. Recording never
raises: events are diagnostics, and a failure to record one must not fail the caller's work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, NotFound
from kubehpc.store.client import EVENT_WRITE, Client, PatchType, WriteOptions
from kubehpc.store.strategy import rfc3339

Obj = dict[str, Any]
log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
_CACHE_SIZE = 4096
# As client-go's recorder, best effort: a controller never waits for its Events to be durable.
_EVENT_PATCH = WriteOptions(read_only=True, best_effort=True)


def _involved(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    ref: Obj = {
        "kind": obj.get("kind", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "name": meta.get("name", ""),
    }
    # Written out, not looped over: every Event starts here.
    namespace, uid, rv = meta.get("namespace"), meta.get("uid"), meta.get("resourceVersion")
    if namespace:
        ref["namespace"] = namespace
    if uid:
        ref["uid"] = uid
    if rv:
        ref["resourceVersion"] = rv
    return ref


def event_name(object_name: str) -> str:
    """client-go's event name: the object's name, a dot, the time in hexadecimal nanoseconds;
    cut to the 253 characters a name may have."""
    suffix = f".{time.time_ns():x}"
    return object_name[: 253 - len(suffix)] + suffix


class EventRecorder:
    """Records Events on behalf of one component (``source.component``)."""

    def __init__(self, client: Client, component: str, host: str = "") -> None:
        self.client = client
        self.component = component
        self.host = host
        self._lock = threading.Lock()
        # (uid or kind/ns/name, type, reason, message) -> (event name, namespace, count)
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()

    def record(self, involved: Obj, type_: str, reason: str, message: str) -> Obj | None:
        """Record (or aggregate) an event; returns the stored Event (read only: see
        ``WriteOptions.read_only``), None when it failed."""
        if type_ not in (NORMAL, WARNING):
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        ref = _involved(involved)
        namespace = ref.get("namespace") or "default"
        identity = ref.get("uid") or f"{ref['kind']}/{namespace}/{ref['name']}"
        key = (str(identity), type_, reason, message)
        now = rfc3339(time.time())
        with self._lock:
            seen = self._seen.get(key)
        try:
            if seen is not None:
                name, ns, count = seen
                try:
                    out = self.client.patch(
                        "v1",
                        "Event",
                        name,
                        {"count": count + 1, "lastTimestamp": now},
                        PatchType.MERGE,
                        namespace=ns,
                        options=_EVENT_PATCH,
                    )
                    self._remember(key, name, ns, count + 1)
                    return out
                except NotFound:
                    pass  # expired or deleted: record afresh
            # Named as client-go's recorder names events: the object's name and the time in
            # hexadecimal nanoseconds (no server-side name search per event).
            name_field = {"name": event_name(ref["name"])}
            try:
                out = self.client.create(
                    self._event(ref, name_field, type_, reason, message, now), EVENT_WRITE
                )
            except AlreadyExists:  # two events of one object in one nanosecond
                name_field = {"generateName": f"{ref['name']}."}
                out = self.client.create(
                    self._event(ref, name_field, type_, reason, message, now), EVENT_WRITE
                )
            self._remember(key, out["metadata"]["name"], namespace, 1)
            return out
        except ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", reason, namespace, ref["name"], exc)
            return None

    def _event(self, ref: Obj, name: dict[str, str], type_: str, reason: str, message: str, now: str) -> Obj:
        """A new Event, built afresh for each create: the store keeps what it is handed."""
        source: Obj = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {**name, "namespace": ref.get("namespace") or "default"},
            "involvedObject": dict(ref),
            "reason": reason,
            "message": message,
            "type": type_,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }

    def _remember(self, key: tuple[str, str, str, str], name: str, namespace: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (name, namespace, count)
            self._seen.move_to_end(key)
            while len(self._seen) > _CACHE_SIZE:
                self._seen.popitem(last=False)


def record_quietly(
    sink: Callable[[Obj, str, str, str], Any], obj: Obj, type_: str, reason: str, message: str
) -> None:
    """Record an event through ``sink``, best effort as in Kubernetes: a controller never fails
    (or retries its work) because an event could not be written."""
    try:
        sink(obj, type_, reason, message)
    except Exception:
        log.debug("recording event %s failed", reason, exc_info=True)
