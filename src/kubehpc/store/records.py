"""What the store keeps per object version and per change.

An object version is kept twice: as its orjson bytes (the source of copies handed to callers —
``orjson.loads`` makes an independent copy faster than ``copy.deepcopy`` — and of HTTP
bodies, which need no re-encoding) and as the decoded dict, shared read-only by the indexes,
selectors and watchers. Nobody may mutate ``Record.obj``. A write-mostly kind's versions
(Events) start as bytes only and are decoded on their first shared read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.store.heap import untrack_json

Obj = dict[str, Any]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


def encode(obj: Obj) -> bytes:
    """``obj`` as JSON bytes of exactly their own size, for bytes the store keeps.

    orjson returns its output in the buffer it wrote into, whose allocation is never shrunk:
    4-8 KiB for a small one, against ~0.7-2 KiB of JSON for a typical Pod, Job or Event. Kept per
    object version, that slack was ~90 KB of resident memory per queued Job, and faulting those pages
    in cost more than the encoding (benchmarks/write_costs.py: ``kept_event_bytes_*``). One copy
    into an exact bytes object costs well under a microsecond.
    """
    return bytes(memoryview(orjson.dumps(obj)))


class Record:
    """One stored version of one object (storage version, resourceVersion set)."""

    __slots__ = ("_obj", "raw", "rv")

    def __init__(self, raw: bytes, obj: Obj | None = None, rv: int = 0) -> None:
        self.raw = raw
        self._obj = obj
        if obj is not None:
            # Kept for as long as this version is, and acyclic: not the collector's business.
            untrack_json(obj)
        # The resourceVersion of the change that wrote this version; 0 when not known (the
        # previous version carried by a change that a log in the earlier format read back).
        self.rv = rv

    @classmethod
    def of(cls, obj: Obj, rv: int) -> Record:
        return cls(encode(obj), obj, rv)

    @property
    def obj(self) -> Obj:
        """The decoded object, shared: read it, never change it."""
        if self._obj is None:
            self._obj = orjson.loads(self.raw)
            untrack_json(self._obj)
        return self._obj

    @property
    def decoded(self) -> Obj | None:
        """The shared decoded object if it was decoded already (never decodes)."""
        return self._obj

    def copy(self) -> Obj:
        """An independent copy the caller may change."""
        out: Obj = orjson.loads(self.raw)
        return out

    @property
    def meta(self) -> Obj:
        meta: Obj = F.metadata(self.obj)
        return meta


@dataclass(slots=True)
class Change:
    """One committed change: the unit of the watch history and of the durable event log.

    ``record`` is the new version (for DELETED: the last version, stamped with the deletion's
    resourceVersion); ``prev`` the version before, so that selector watches can tell an object
    leaving their selection (sent as DELETED) from one entering it (sent as ADDED).
    """

    rv: int
    type: str
    resource: str
    namespace: str
    name: str
    record: Record
    prev: Record | None

    # Written out (as the other hot dataclasses' are): mypyc compiles a written __init__ to a
    # native constructor, where the one @dataclass generates runs interpreted, three times
    # slower. Every write makes a Change.
    def __init__(
        self,
        rv: int,
        type: str,
        resource: str,
        namespace: str,
        name: str,
        record: Record,
        prev: Record | None,
    ) -> None:
        self.rv = rv
        self.type = type
        self.resource = resource
        self.namespace = namespace
        self.name = name
        self.record = record
        self.prev = prev
