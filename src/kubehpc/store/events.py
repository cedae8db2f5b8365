"""Recording v1 Events about objects, aggregated the way client-go's recorder does.

An event repeated for the same object with the same type, reason and message bumps ``count``
and ``lastTimestamp`` of the existing Event instead of creating a new one. Recording never
raises: events are diagnostics, and a failure to record one must not fail the caller's work.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import AlreadyExists, ApiError, NotFound
from kubehpc.api.names import dns1123_label_remembered, is_dns1123_subdomain
from kubehpc.store.client import Client, PatchType, WriteOptions
from kubehpc.store.strategy import now_rfc3339

Obj = dict[str, Any]
log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
_CACHE_SIZE = 4096
# As client-go's recorder, best effort: a controller never waits for its Events to be durable.
_EVENT_PATCH = WriteOptions(read_only=True, best_effort=True)
CHECKED_EVENT_WRITE = WriteOptions(read_only=True, handed_over=True, best_effort=True)
"""An Event's creation the recorder cannot vouch for (see :func:`event_write`): validated by
the store as any other write, and refused there if it is not valid."""
# An Event's creation :func:`event_write` vouched for. Private: the store takes the option's
# word for it (for core v1 Events), so nothing else may hand it over.
_VOUCHED_EVENT_WRITE = WriteOptions(
    read_only=True, handed_over=True, best_effort=True, valid_by_construction=True
)


def _involved(obj: Obj) -> Obj:
    meta = F.metadata(obj)
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
    the name cut to fit the 253 characters a name may have, and a cut that ends in '-' or '.'
    cut back to the last letter or digit. Of a DNS subdomain, this is a DNS subdomain."""
    suffix = f".{time.time_ns():x}"
    if len(object_name) + len(suffix) > 253:
        object_name = object_name[: 253 - len(suffix)].rstrip("-.")
    return object_name + suffix


def event_write(ref: Obj, namespace: str, type_: object, reason: object, message: object) -> WriteOptions:
    """How to create an Event about ``ref`` (its involvedObject) in ``namespace``, named by
    :func:`event_name`: valid by construction when its name and namespace are a DNS subdomain
    and label, its type Normal or Warning and every value the caller handed in a ``str``
    itself, no subclass (the schema takes nothing else); the rest of an Event is the
    recorder's own strings (checked when it is made), constants and clock readings. Else
    :data:`CHECKED_EVENT_WRITE`: the store checks it as any write."""
    for value in ref.values():
        if type(value) is not str:
            return CHECKED_EVENT_WRITE
    name = ref.get("name")
    if (
        type(type_) is str
        and type_ in (NORMAL, WARNING)
        and type(reason) is str
        and type(message) is str
        and type(name) is str
        and is_dns1123_subdomain(name)
        and not dns1123_label_remembered(namespace)
    ):
        return _VOUCHED_EVENT_WRITE
    return CHECKED_EVENT_WRITE


class EventRecorder:
    """Records Events on behalf of one component (``source.component``)."""

    def __init__(self, client: Client, component: str, host: str = "") -> None:
        # Both go into every Event this recorder makes, which the store does not check again.
        if type(component) is not str or type(host) is not str:
            raise TypeError(
                f"component and host must be str, not {type(component).__name__}, {type(host).__name__}"
            )
        self.client = client
        self.component = component
        self.host = host
        self._source: Obj = {"component": component, "host": host} if host else {"component": component}
        self._lock = threading.Lock()
        # (uid or kind/ns/name, type, reason, message) -> (event name, namespace, count), oldest
        # first (a dict keeps insertion order: a remembered key is moved to the end).
        self._seen: dict[tuple[str, str, str, str], tuple[str, str, int]] = {}

    def record(self, involved: Obj, type_: str, reason: str, message: str) -> Obj | None:
        """Record (or aggregate) an event; returns the stored Event (read only: see
        ``WriteOptions.read_only``), None when it failed."""
        if type_ != NORMAL and type_ != WARNING:
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        ref = _involved(involved)
        namespace = ref.get("namespace") or "default"
        identity = ref.get("uid") or f"{ref['kind']}/{namespace}/{ref['name']}"
        key = (str(identity), type_, reason, message)
        now = now_rfc3339()
        seen = self._seen.get(key)  # one lookup: atomic under the interpreter lock
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
            # Checked only here: a repeat above patches the count and needs no options.
            options = event_write(ref, namespace, type_, reason, message)
            # Named as client-go's recorder names events: the object's name and the time in
            # hexadecimal nanoseconds (no server-side name search per event).
            try:
                out = self.client.create(
                    self._event(ref, namespace, "name", event_name(ref["name"]), type_, reason, message, now),
                    options,
                )
            except AlreadyExists:  # two events of one object in one nanosecond: a generated name
                out = self.client.create(
                    self._event(
                        dict(ref), namespace, "generateName", f"{ref['name']}.", type_, reason, message, now
                    ),
                    CHECKED_EVENT_WRITE,
                )
            self._remember(key, out["metadata"]["name"], namespace, 1)
            return out
        except ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", reason, namespace, ref["name"], exc)
            return None

    def _event(
        self,
        ref: Obj,
        namespace: str,
        name_field: str,
        name: str,
        type_: str,
        reason: str,
        message: str,
        now: str,
    ) -> Obj:
        """A new Event, built afresh for each create: the store keeps what it is handed (the
        reference is the caller's own, from :func:`_involved`; the source is copied)."""
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {name_field: name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": dict(self._source),
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }

    def _remember(self, key: tuple[str, str, str, str], name: str, namespace: str, count: int) -> None:
        seen = self._seen
        with self._lock:
            seen.pop(key, None)  # to the end: the newest
            seen[key] = (name, namespace, count)
            if len(seen) > _CACHE_SIZE:
                # The oldest quarter goes at once. A dict keeps the slots of deleted keys until
                # it is resized, and iteration walks over them: forgetting one key at a time
                # from the front walked over every key forgotten since the last resize, on every
                # event (1 % of the control plane's CPU at 15,000 Jobs).
                for old in list(itertools.islice(seen, len(seen) - _CACHE_SIZE + _CACHE_SIZE // 4)):
                    del seen[old]


def record_quietly(
    sink: Callable[[Obj, str, str, str], Any], obj: Obj, type_: str, reason: str, message: str
) -> None:
    """Record an event through ``sink``, best effort as in Kubernetes: a controller never fails
    (or retries its work) because an event could not be written."""
    try:
        sink(obj, type_, reason, message)
    except Exception:
        log.debug("recording event %s failed", reason, exc_info=True)
