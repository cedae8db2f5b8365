"""The Client protocol: the only way controllers, the scheduler loop and node agents touch state.

Two implementations stand behind it: the embedded store (in process, SQLite underneath) and a
REST client for any Kubernetes-compatible API server (the embedded one, or a real cluster).
Both speak plain dicts shaped exactly like the Kubernetes JSON objects and raise
``kubehpc.api.errors.ApiError`` subclasses, so code written against one runs on the other.

Resources are named the way manifests name them: ``api_version`` ("v1", "batch/v1") and
``kind`` ("Pod", "Job"). Cluster-scoped kinds take ``namespace=None``.
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

Obj = dict[str, Any]


class PatchType(enum.StrEnum):
    """Patch formats, named by their HTTP content types."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class Propagation(enum.StrEnum):
    """DeleteOptions.propagationPolicy."""

    ORPHAN = "Orphan"
    BACKGROUND = "Background"
    FOREGROUND = "Foreground"


@dataclass
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR. Treat it as
    immutable."""

    type: str
    object: Obj

    # Written out: a watch makes one per delivered change, and mypyc compiles this one to a
    # native constructor where a generated (frozen) one costs eight times as much.
    def __init__(self, type: str, object: Obj) -> None:
        self.type = type
        self.object = object


@dataclass
class ObjectList:
    items: list[Obj]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None
    api_version: str = "v1"
    kind: str = "List"

    def __init__(
        self,
        items: list[Obj],
        resource_version: str,
        continue_token: str = "",
        remaining_item_count: int | None = None,
        api_version: str = "v1",
        kind: str = "List",
    ) -> None:
        # Written out: controllers list on every reconcile (see WatchEvent).
        self.items = items
        self.resource_version = resource_version
        self.continue_token = continue_token
        self.remaining_item_count = remaining_item_count
        self.api_version = api_version
        self.kind = kind

    def to_dict(self) -> Obj:
        meta: Obj = {"resourceVersion": self.resource_version}
        if self.continue_token:
            meta["continue"] = self.continue_token
        if self.remaining_item_count is not None:
            meta["remainingItemCount"] = self.remaining_item_count
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "items": self.items}


class Watch(Protocol):
    """A stream of events, in resourceVersion order, until ``stop()``.

    Iterate synchronously (blocking) from threads, or with ``async for`` from asyncio code.
    A watch started from a resourceVersion older than the kept history raises
    ``errors.Gone`` (HTTP 410) on creation.
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class ListOptions:
    namespace: str | None = None
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    without_managed_fields: bool = False
    """The caller never reads ``metadata.managedFields``: a real API server's Pods and Nodes
    may come without them (:mod:`kubehpc.kube.managedfields`); the embedded store has none."""
    read_only: bool = False
    """The caller only reads the objects and never changes them: the embedded store may then
    hand out its own decoded objects, shared with every other read-only reader, instead of a
    fresh copy each (a copy of a pod costs more than most controllers' work on it). A client
    over HTTP decodes a fresh object anyway."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (controllers list on every reconcile).
    def __init__(
        self,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        without_managed_fields: bool = False,
        read_only: bool = False,
    ) -> None:
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "label_selector", label_selector)
        object.__setattr__(self, "field_selector", field_selector)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "continue_token", continue_token)
        object.__setattr__(self, "resource_version", resource_version)
        object.__setattr__(self, "without_managed_fields", without_managed_fields)
        object.__setattr__(self, "read_only", read_only)


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_validation: str = "Strict"
    field_manager: str = ""
    read_only: bool = False
    """The caller only reads the object the write returns, as :attr:`ListOptions.read_only`:
    the embedded store may return the object it keeps, shared with its read-only readers,
    instead of decoding a copy (which costs as much as encoding it did). Over HTTP the
    response is decoded afresh anyway."""
    handed_over: bool = False
    """The caller hands the object it writes over to the store: built for this write, sharing
    no mutable part with any other object, and never changed by the caller afterwards (an
    ``update_status`` hands over its ``status`` alone: the rest is only read). The embedded
    store then works on it and keeps it instead of first copying it (the copy costs as much
    as encoding it does). It must hold JSON values only. Over HTTP it changes nothing."""
    best_effort: bool = False
    """The write need not be durable when the call returns: the embedded store applies it at
    once (reads see it) and commits it with the next write's transaction, or on its own within
    ``store.BEST_EFFORT_COMMIT_S``; watches see it once committed. A crash in between loses
    it. For what Kubernetes records best effort: Events (client-go's recorder writes them
    asynchronously and drops them under load). Over HTTP it changes nothing."""
    valid_by_construction: bool = False
    """The object is an Event the control plane's own recorder built, every field of it from
    a stored object, a constant or a clock, and what callers handed in checked
    (``events.event_write``): it passes validation by construction, so the embedded store
    skips the schema and metadata checks (a third of an Event's cost, and the control plane
    records eight per Job). Honoured for core v1 Events only; any other object is validated as
    ever. Set only by ``events.event_write``, for an Event it has vouched for. Over HTTP it
    changes nothing: the API server validates what it is sent."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (most writes make one).
    def __init__(
        self,
        dry_run: bool = False,
        field_validation: str = "Strict",
        field_manager: str = "",
        read_only: bool = False,
        handed_over: bool = False,
        best_effort: bool = False,
        valid_by_construction: bool = False,
    ) -> None:
        object.__setattr__(self, "dry_run", dry_run)
        object.__setattr__(self, "field_validation", field_validation)
        object.__setattr__(self, "field_manager", field_manager)
        object.__setattr__(self, "read_only", read_only)
        object.__setattr__(self, "handed_over", handed_over)
        object.__setattr__(self, "best_effort", best_effort)
        object.__setattr__(self, "valid_by_construction", valid_by_construction)


READ_ONLY_RESULT = WriteOptions(read_only=True)
"""Options of a write whose caller at most reads what it returns (most controllers' writes)."""

HANDED_OVER = WriteOptions(read_only=True, handed_over=True)
"""Options of a write of an object built for it (a pod from its template, a fresh status)
whose caller at most reads what the write returns."""


@dataclass(frozen=True)
class DeleteOptions:
    propagation_policy: Propagation | None = None
    grace_period_seconds: int | None = None
    preconditions_uid: str = ""
    preconditions_resource_version: str = ""
    dry_run: bool = False


@dataclass
class WriteResult:
    """What a write returns: the object as stored, plus warnings for the caller to show."""

    object: Obj
    warnings: list[str] = field(default_factory=list)

    def __init__(self, object: Obj, warnings: list[str] | None = None) -> None:
        # Written out: every write returns one (see WatchEvent).
        self.object = object
        self.warnings = [] if warnings is None else warnings


class Client(Protocol):
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, read_only: bool = False
    ) -> Obj:
        """One object; ``read_only`` as in :class:`ListOptions`: the caller never changes it."""
        ...

    def list(self, api_version: str, kind: str, options: ListOptions | None = None) -> ObjectList: ...

    def watch(
        self,
        api_version: str,
        kind: str,
        options: ListOptions | None = None,
        allow_bookmarks: bool = False,
    ) -> Watch:
        """Events after ``options.resource_version`` ("" or "0": the current state as ADDED
        events first, then changes), filtered by namespace and selectors."""
        ...

    def create(self, obj: Obj, options: WriteOptions | None = None) -> Obj: ...

    def update(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        """Replace the object; ``metadata.resourceVersion``, when set, must be current (409)."""
        ...

    def update_status(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        """Replace only ``status`` (the status subresource)."""
        ...

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
    ) -> Obj: ...

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Obj:
        """Delete (or begin deleting) the object; returns it as last stored, with
        ``metadata.deletionTimestamp`` set when finalizers or foreground deletion keep it."""
        ...


class BatchingClient(Protocol):
    def batch(self) -> AbstractContextManager[None]: ...


def write_batch(client: Client) -> AbstractContextManager[None]:
    """One transaction for the writes inside the block when ``client`` can (the embedded store:
    one SQLite commit, one wake-up per watcher); each write on its own elsewhere (an API
    server). Level-triggered callers only: if the commit fails, every write of the block is
    rolled back, and the caller must look again at what is stored."""
    # Looked up, not isinstance(): a runtime Protocol check costs more than the batch saves,
    # and mypyc (which compiles this module) makes Protocols plain classes.
    if callable(getattr(client, "batch", None)):
        return cast(BatchingClient, client).batch()
    return contextlib.nullcontext()


class ChunkedWrites:
    """Many units of work written in :func:`write_batch` batches that close after
    ``max_units`` units or ``max_s`` seconds of ``clock``, whichever comes first: a long run of
    writes (an admission cycle's results) still costs few commits, and another writer waits for
    the embedded store's lock about one chunk at most, not the whole run. Call :meth:`done_one`
    after each unit. A chunk whose commit fails raises, and the chunks before it stay written:
    as with :func:`write_batch`, only for level-triggered callers."""

    def __init__(
        self,
        client: Client,
        max_units: int,
        max_s: float,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.max_units = max_units
        self.max_s = max_s
        self.clock = clock
        self.pause = pause
        self.chunks = 0
        self._batch: AbstractContextManager[None] | None = None
        self._units = 0
        self._until = 0.0

    def __enter__(self) -> ChunkedWrites:
        self._open()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        batch, self._batch = self._batch, None
        if batch is not None:
            batch.__exit__(exc_type, exc, tb)

    def done_one(self) -> None:
        """One unit's writes are made: close the chunk if it is full or its time is up."""
        self._units += 1
        if self._units >= self.max_units or self.clock() >= self._until:
            batch, self._batch = self._batch, None
            if batch is not None:
                batch.__exit__(None, None, None)  # commits; a failure propagates
            # A writer woken by the lock's release still needs the interpreter: yield, or this
            # thread takes the lock again first.
            self.pause(0.0)
            self._open()

    def _open(self) -> None:
        batch = write_batch(self.client)
        batch.__enter__()
        self._batch = batch
        self.chunks += 1
        self._units = 0
        self._until = self.clock() + self.max_s


def resource_version_number(value: object) -> int | None:
    """A resourceVersion as a number, to tell which of two versions is newer. Clients are meant
    to treat it as opaque; the embedded store's (and etcd's) are integers, but where one is not
    this is None, and the caller must then not order by it."""
    try:
        return int(str(value))
    except ValueError:
        return None
