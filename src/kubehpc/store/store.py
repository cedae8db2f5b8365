"""The embedded store: Kubernetes object semantics over in-memory indexes and a SQLite log.

Reads (get, list, watch) are served from memory and never touch SQLite; every write is
applied to memory, committed to SQLite (one transaction per call, or per ``batch()``), and
only then published to watches and returned. See :mod:`kubehpc.store.sqlite` for what the
commit guarantees. A best-effort write (an Event; ``WriteOptions.best_effort``) returns once
applied and rides along in the next commit: a transaction costs about as much as the write
itself, and Kubernetes records Events best effort anyway.

Objects are kept in their kind's storage version and converted to the requested version on
the way out. Callers always get independent copies (decoded from the stored JSON bytes);
``get_raw``/``list_raw`` hand out the bytes themselves for the HTTP server.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.api.errors import BadRequest, Gone, NotFound
from kubehpc.api.registry import Registry, ResourceType
from kubehpc.store.admission import AdmissionHook
from kubehpc.store.client import ListOptions, ObjectList, Watch
from kubehpc.store.expiry import Deadlines
from kubehpc.store.records import ADDED, DELETED, Change, Obj, Record
from kubehpc.store.selectors import Requirement, parse_field_selector, parse_label_selector
from kubehpc.store.sqlite import SqliteLog
from kubehpc.store.watch import StoreWatch, WatchFilter
from kubehpc.store.writes import WritesMixin

log = logging.getLogger(__name__)

DEFAULT_MEMORY_HISTORY = 20_000
DEFAULT_DURABLE_HISTORY = 200_000
DEFAULT_BOOKMARK_INTERVAL_S = 2.0
DEFAULT_MAX_WATCH_QUEUE = 100_000  # undelivered events before a watch is cut off
EXPIRE_CHUNK = 1_000  # expired objects deleted per commit (the lock is let go in between)
# How long a best-effort write (``WriteOptions.best_effort``) waits at most for another write's
# commit to carry it before the store commits it on its own.
BEST_EFFORT_COMMIT_S = 0.05


class Store(WritesMixin):
    """Implements :class:`kubehpc.store.client.Client` in process.

    ``path=None`` keeps everything in memory (tests, the simulator); a path opens (or creates)
    the SQLite database there and loads it. ``ttl`` gives kinds, by (apiVersion, kind), a time
    to live in seconds after each write (Events: kube-apiserver's ``--event-ttl``), measured on
    ``clock``; :meth:`expire` deletes what outlived it.
    """

    def __init__(
        self,
        registry: Registry,
        path: Path | None = None,
        *,
        memory_history: int = DEFAULT_MEMORY_HISTORY,
        durable_history: int = DEFAULT_DURABLE_HISTORY,
        bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL_S,
        max_watch_queue: int = DEFAULT_MAX_WATCH_QUEUE,
        seed: int | None = None,
        admission: Sequence[AdmissionHook] = (),
        ttl: Mapping[tuple[str, str], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry
        ttl_by_resource = {registry.for_kind(av, kind)[0].key: s for (av, kind), s in (ttl or {}).items()}
        self._deadlines = Deadlines(ttl_by_resource, clock)
        self.admission = tuple(admission)
        self._lock = threading.RLock()
        # resource key -> namespace ("" when cluster-scoped) -> name -> current record
        self._objects: dict[str, dict[str, dict[str, Record]]] = {rt.key: {} for rt in registry}
        # resource key -> (label key, value) -> namespace -> names: a list by label (a Job's
        # pods, a queue's workloads) reads only the objects carrying the label, not every one.
        # Built for a resource on its first list by label (so a reload decodes nothing), then
        # kept current by every write.
        self._by_label: dict[str, dict[tuple[str, str], dict[str, set[str]]]] = {}
        self._rv = 0
        self._history: deque[Change] = deque()
        self._memory_history = memory_history
        self._durable_history = durable_history
        self._memory_floor = 0  # every change above this rv is in self._history
        self._durable_floor = 0  # every change above this rv is in the SQLite log
        self._pending: list[Change] = []
        self._batch_depth = 0
        # Best-effort writes waiting in ``_pending`` for a commit: the flusher thread (started
        # on the first of them) commits them when no other write has within
        # BEST_EFFORT_COMMIT_S.
        self._flush_due = threading.Condition(self._lock)
        self._flush_scheduled = False
        self._flusher: threading.Thread | None = None
        self._watchers: dict[str, set[StoreWatch]] = {rt.key: set() for rt in registry}
        self._bookmark_interval = bookmark_interval
        self._max_watch_queue = max_watch_queue
        self._rng = random.Random(seed)
        self._log = SqliteLog(path) if path is not None else None
        self._closed = False
        if self._log is not None:
            self._load(self._log)
        self._ensure_initial_namespaces()

    # --- lifecycle -----------------------------------------------------------------------

    def _load(self, log: SqliteLog) -> None:
        self._rv = log.last_rv()
        self._durable_floor = log.counter("compacted")
        for resource, namespace, name, rv, data in log.objects():
            by_ns = self._objects.get(resource)
            if by_ns is None:  # a kind no longer registered: keep it on disk, do not serve it
                continue
            by_ns.setdefault(namespace, {})[name] = Record(data, rv=rv)
            if resource in self._deadlines:
                # As etcd grants its leases again when it starts: a full time to live from now.
                self._deadlines.written(resource, namespace, name)
        tail = log.changes_after(self._durable_floor, limit=self._memory_history)
        self._history.extend(tail)
        self._memory_floor = tail[0].rv - 1 if tail else self._rv

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._batch_depth == 0:
                self._flush()  # best-effort writes still waiting
            self._closed = True
            self._flush_due.notify_all()
            watchers = [w for ws in self._watchers.values() for w in ws]
        for w in watchers:
            w.stop()
        with self._lock:  # not while another thread is committing
            if self._log is not None:
                self._log.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        return self._rv

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Commit every write inside the block in one transaction, at its end.

        Writes inside are visible to reads at once, but acknowledged (durable) and published
        to watches only when the block exits; an exception inside rolls all of them back.
        """
        return _WriteBlock(self, later=False)

    def _commit_later(self) -> contextlib.AbstractContextManager[None]:
        """Apply the writes inside at once but let the next commit carry them (see
        ``WriteOptions.best_effort``): another write's, a batch's, or the flusher's."""
        return _WriteBlock(self, later=True)

    def _schedule_flush(self, mark: int) -> None:
        """Have the flusher commit the best-effort writes after ``mark`` in ``_pending`` unless
        another commit carries them first (called with the lock held)."""
        if len(self._pending) > mark and not self._flush_scheduled:
            self._flush_scheduled = True
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_best_effort, name="store-flusher", daemon=True
                )
                self._flusher.start()
            self._flush_due.notify()

    def _flush_best_effort(self) -> None:
        """The flusher: commits best-effort writes no other commit carried within
        BEST_EFFORT_COMMIT_S of being scheduled."""
        with self._lock:
            while not self._closed:
                if not self._flush_scheduled:
                    self._flush_due.wait()
                    continue
                self._flush_due.wait(BEST_EFFORT_COMMIT_S)
                self._flush_scheduled = False
                if self._closed:
                    return
                try:
                    self._flush()
                except Exception:  # the failed writes are rolled back; they were best effort
                    log.warning("committing best-effort writes failed", exc_info=True)

    def _flush_best_effort_now(self) -> None:
        """Commit waiting best-effort writes before what follows exposes the current
        resourceVersion to a watch (called with the lock held)."""
        if self._batch_depth == 0 and self._pending:
            self._flush()

    def expire(self) -> int:
        """Delete every object whose time to live has passed since its last write, as etcd
        deletes an Event whose lease ran out: at once, finalizers or not; watches see DELETED.
        Returns how many went. Commits a chunk at a time, so writers wait for one chunk only."""
        expired = 0
        while True:
            with self._lock:
                due = self._deadlines.take_due(EXPIRE_CHUNK)
                if not due:
                    return expired
                with self.batch():
                    for resource, namespace, name in due:
                        rec = self._objects[resource].get(namespace, {}).get(name)
                        if rec is None:
                            continue  # gone already
                        self._commit(self.registry.get(resource), DELETED, rec.copy(), rec)
                        expired += 1

    # --- commit path (called with the lock held) -----------------------------------------

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _apply(self, change: Change) -> None:
        """Put a change into the indexes and queue it for the next commit."""
        by_name = self._objects[change.resource].setdefault(change.namespace, {})
        new = None if change.type == DELETED else change.record
        self._index(change.resource, change.namespace, change.name, by_name.get(change.name), new)
        if change.type == DELETED:
            by_name.pop(change.name, None)
            if not by_name:
                del self._objects[change.resource][change.namespace]
        else:
            by_name[change.name] = change.record
        if change.resource in self._deadlines:
            if change.type == DELETED:
                self._deadlines.deleted(change.resource, change.namespace, change.name)
            else:
                self._deadlines.written(change.resource, change.namespace, change.name)
        self._pending.append(change)
        if self._batch_depth == 0:
            self._flush()

    def _rollback(self, since: int = 0) -> None:
        """Undo the pending changes from index ``since`` on."""
        undone = self._pending[since:]
        for change in reversed(undone):
            by_name = self._objects[change.resource].setdefault(change.namespace, {})
            self._index(change.resource, change.namespace, change.name, by_name.get(change.name), change.prev)
            if change.prev is None:
                by_name.pop(change.name, None)
            else:
                by_name[change.name] = change.prev
            if change.resource in self._deadlines:
                # Back as it was, with a full lease (a later deadline never loses an object).
                if change.prev is None:
                    self._deadlines.deleted(change.resource, change.namespace, change.name)
                else:
                    self._deadlines.written(change.resource, change.namespace, change.name)
        if undone:
            self._rv = undone[0].rv - 1
        del self._pending[since:]

    def _index(
        self, resource: str, namespace: str, name: str, old: Record | None, new: Record | None
    ) -> None:
        """Move ``name`` in the label index from the labels of ``old`` to those of ``new``."""
        index = self._by_label.get(resource)
        if index is None:
            return  # not indexed (yet)
        before = F.obj_field(old.meta, "labels") if old is not None else {}
        after = F.obj_field(new.meta, "labels") if new is not None else {}
        if before == after:
            return
        for pair in before.items():
            if after.get(pair[0]) != pair[1]:
                by_ns = index.get(pair)
                names = by_ns.get(namespace) if by_ns is not None else None
                if names is not None:
                    names.discard(name)
                    if not names:
                        del by_ns[namespace]  # type: ignore[union-attr]
                        if not by_ns:
                            del index[pair]
        for pair in after.items():
            if before.get(pair[0]) != pair[1]:
                index.setdefault(pair, {}).setdefault(namespace, set()).add(name)

    def _label_index(self, resource: str) -> dict[tuple[str, str], dict[str, set[str]]]:
        """The label index of ``resource``, built now if this is its first list by label."""
        index = self._by_label.get(resource)
        if index is None:
            index = self._by_label[resource] = {}
            for namespace, by_name in self._objects[resource].items():
                for name, rec in by_name.items():
                    self._index(resource, namespace, name, None, rec)
        return index

    def _labelled(self, resource: str, requirements: tuple[Requirement, ...]) -> dict[str, set[str]] | None:
        """Names per namespace of the only objects that can match: those with the label of one
        equality requirement, else those with the key of one existence requirement (the union
        of that key's values, a walk over the index's keys rather than over every object);
        None when no requirement narrows the search. Called with the lock held."""
        for req in requirements:
            if req.op in ("=", "in") and len(req.values) == 1:
                return self._label_index(resource).get((req.key, req.values[0]), {})
        for req in requirements:
            if req.op == "exists":
                union: dict[str, set[str]] = {}
                for (key, _), by_ns in self._label_index(resource).items():
                    if key == req.key:
                        for namespace, names in by_ns.items():
                            union.setdefault(namespace, set()).update(names)
                return union
        return None

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        if self._log is not None:
            try:
                self._log.write(pending)
            except BaseException:
                self._rollback()
                raise
        self._pending = []
        history = self._history
        history.extend(pending)
        overflow = len(history) - self._memory_history
        for _ in range(max(0, overflow)):
            self._memory_floor = history.popleft().rv
        if self._log is None:
            self._durable_floor = self._memory_floor
        elif self._rv - self._durable_floor > self._durable_history * 1.1:
            # Compact in steps of a tenth of the window so the DELETE is amortised.
            self._durable_floor = self._rv - self._durable_history
            self._log.compact(self._durable_floor)
        by_resource: dict[str, list[Change]] = {}
        for change in pending:
            by_resource.setdefault(change.resource, []).append(change)
        for resource, changes in by_resource.items():
            for w in self._watchers[resource]:
                w.offer_all(changes)
        for resource in by_resource:
            watchers = self._watchers[resource]
            if any(w.stopped for w in watchers):
                self._watchers[resource] = {w for w in watchers if not w.stopped}

    # --- reads ---------------------------------------------------------------------------

    def _type(self, api_version: str, kind: str) -> tuple[ResourceType, str]:
        rt, vs = self.registry.for_kind(api_version, kind)
        return rt, vs.name

    @staticmethod
    def _ns(rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "default") if rt.namespaced else ""

    def changed_shared_objects(self) -> list[str]:
        """Stored versions whose shared decoded object no longer serialises to the bytes it was
        stored as: someone changed, in place, what ``read_only`` readers are handed. A check for
        tests and debugging (it serialises every decoded version); empty when all is well."""
        with self._lock:
            records = [
                (f"{key} {ns}/{name}" if ns else f"{key} {name}", rec)
                for key, by_ns in self._objects.items()
                for ns, by_name in by_ns.items()
                for name, rec in by_name.items()
            ]
            records += [
                (f"{c.resource} {c.namespace}/{c.name}@{c.rv}", r)
                for c in self._history
                for r in (c.record, c.prev)
                if r is not None
            ]
        return [
            what for what, rec in records if rec.decoded is not None and orjson.dumps(rec.decoded) != rec.raw
        ]

    def _record(self, rt: ResourceType, namespace: str, name: str) -> Record | None:
        return self._objects[rt.key].get(namespace, {}).get(name)

    def _not_found(self, rt: ResourceType, name: str) -> NotFound:
        return NotFound(f'{rt.key} "{name}" not found', name=name, kind=rt.plural, group=rt.group)

    def _decode(self, rt: ResourceType, version: str, raw: bytes) -> Obj:
        obj: Obj = orjson.loads(raw)
        if version != rt.storage_version:
            obj = rt.from_storage(obj, version)
        return obj

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, read_only: bool = False
    ) -> Obj:
        rt, version = self._type(api_version, kind)
        rec = self._record(rt, self._ns(rt, namespace), name)
        if rec is None:
            raise self._not_found(rt, name)
        if read_only and version == rt.storage_version:
            return rec.obj  # shared with the store's other readers: never to be changed
        return self._decode(rt, version, rec.raw)

    def get_raw(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bytes:
        """The object's JSON bytes as ``get`` would return it (no copy when the version is the
        storage version): for the HTTP server."""
        rt, version = self._type(api_version, kind)
        rec = self._record(rt, self._ns(rt, namespace), name)
        if rec is None:
            raise self._not_found(rt, name)
        if version == rt.storage_version:
            return rec.raw
        return orjson.dumps(self._decode(rt, version, rec.raw))

    def _select(self, rt: ResourceType, options: ListOptions) -> tuple[list[Record], str, int | None, int]:
        labels = parse_label_selector(options.label_selector)
        fields = parse_field_selector(options.field_selector)
        after: tuple[str, str] | None = None
        if options.continue_token:
            after = _decode_continue(options.continue_token)
        with self._lock:
            rv = self._rv
            by_ns = self._objects[rt.key]
            pinned_ns = (options.namespace or None) if rt.namespaced else None
            pinned_ns = pinned_ns or fields.exact("metadata.namespace") if rt.namespaced else None
            namespaces = [pinned_ns] if pinned_ns is not None else sorted(by_ns)
            candidates: list[tuple[str, str, Record]] = []
            pinned_name = fields.exact("metadata.name")
            labelled = self._labelled(rt.key, labels.requirements)
            for ns in namespaces:
                by_name = by_ns.get(ns)
                if not by_name:
                    continue
                if after is not None and ns < after[0]:
                    continue
                if pinned_name is not None:
                    rec = by_name.get(pinned_name)
                    items = [(pinned_name, rec)] if rec is not None else []
                elif labelled is not None:
                    items = sorted((n, by_name[n]) for n in labelled.get(ns, ()) if n in by_name)
                else:
                    items = sorted(by_name.items())
                for name, rec in items:
                    if after is not None and (ns, name) <= after:
                        continue
                    candidates.append((ns, name, rec))
        unfiltered = labels.empty and fields.empty

        def wanted(rec: Record) -> bool:
            return unfiltered or (labels.matches_object(rec.obj) and fields.matches(rec.obj))

        selected: list[Record] = []
        remaining: int | None = None
        token = ""
        last = ("", "")
        for i, (ns, name, rec) in enumerate(candidates):
            if not wanted(rec):
                continue
            if options.limit and len(selected) == options.limit:
                token = _encode_continue(rv, *last)
                remaining = sum(1 for _, _, r in candidates[i:] if wanted(r))
                break
            selected.append(rec)
            last = (ns, name)
        return selected, token, remaining, rv

    def list(self, api_version: str, kind: str, options: ListOptions | None = None) -> ObjectList:
        rt, version = self._type(api_version, kind)
        options = options or ListOptions()
        records, token, remaining, rv = self._select(rt, options)
        if options.read_only and version == rt.storage_version:
            items = [r.obj for r in records]  # shared: see ListOptions.read_only
        else:
            items = [self._decode(rt, version, r.raw) for r in records]
        return ObjectList(
            items=items,
            resource_version=str(rv),
            continue_token=token,
            remaining_item_count=remaining,
            api_version=rt.api_version(version),
            kind=rt.list_kind,
        )

    def list_raw(self, api_version: str, kind: str, options: ListOptions | None = None) -> bytes:
        """The JSON bytes of ``list(...).to_dict()``, assembled from the stored bytes of each
        item without decoding them (when the version is the storage version)."""
        rt, version = self._type(api_version, kind)
        records, token, remaining, rv = self._select(rt, options or ListOptions())
        if version == rt.storage_version:
            items = b",".join(r.raw for r in records)
        else:
            items = b",".join(orjson.dumps(self._decode(rt, version, r.raw)) for r in records)
        shell = ObjectList([], str(rv), token, remaining, rt.api_version(version), rt.list_kind).to_dict()
        head = orjson.dumps(shell)
        assert head.endswith(b'"items":[]}')
        return head[: -len(b"]}")] + items + b"]}"

    # --- watch ---------------------------------------------------------------------------

    def watch(
        self,
        api_version: str,
        kind: str,
        options: ListOptions | None = None,
        allow_bookmarks: bool = False,
    ) -> Watch:
        return self.watch_store(api_version, kind, options, allow_bookmarks)

    def watch_store(
        self,
        api_version: str,
        kind: str,
        options: ListOptions | None = None,
        allow_bookmarks: bool = False,
    ) -> StoreWatch:
        """``watch`` returning the concrete type (with ``raw_items`` for the HTTP server)."""
        options = options or ListOptions()
        rt, version = self._type(api_version, kind)
        flt = WatchFilter(
            options.namespace if rt.namespaced else None,
            parse_label_selector(options.label_selector),
            parse_field_selector(options.field_selector),
        )
        start = _parse_rv(options.resource_version)
        api_v = rt.api_version(version)

        def bookmark(rv: int) -> Obj:
            return {"apiVersion": api_v, "kind": rt.kind, "metadata": {"resourceVersion": str(rv)}}

        w = StoreWatch(
            flt,
            lambda raw: self._decode(rt, version, raw),
            bookmark if allow_bookmarks else None,
            self._bookmark_interval,
            self._unregister,
            raw_ok=version == rt.storage_version,
            max_queue=self._max_watch_queue,
            shared=options.read_only and version == rt.storage_version,
        )
        with self._lock:
            # Otherwise a waiting best-effort write would reach this watch twice: as what
            # exists now and again when committed.
            self._flush_best_effort_now()
            if start == 0:
                # Synthetic ADDED events for what exists now, then changes from here on.
                for ns in sorted(self._objects[rt.key]):
                    for _name, rec in sorted(self._objects[rt.key][ns].items()):
                        if flt.matches(ns, rec):
                            w.push(ADDED, rec, self._rv)
                w.start_at(self._rv)
            else:
                for change in self._changes_after(start):
                    if change.resource == rt.key:
                        w.offer(change)
                w.start_at(max(start, self._rv))
            self._watchers[rt.key].add(w)
        return w

    def _changes_after(self, rv: int) -> Iterator[Change]:
        if rv >= self._memory_floor:
            for change in self._history:
                if change.rv > rv:
                    yield change
            return
        if rv < self._durable_floor or self._log is None:
            raise Gone(f"too old resource version: {rv} ({self._durable_floor + 1})")
        yield from self._log.changes_after(rv)
        # the SQLite log holds everything up to the last flush, which the memory history also
        # ends with; nothing more to add.

    def _unregister(self, w: StoreWatch) -> None:
        with self._lock:
            for ws in self._watchers.values():
                ws.discard(w)


class _WriteBlock:
    """A ``with`` block of writes holding the store's lock: a batch (``later=False``: one
    commit at its end) or best-effort writes (``later=True``: the next commit carries them).
    Writes already pending when it starts (best-effort ones) are never undone with it. A class,
    not a generator: mypyc compiles it, where contextlib's wrapper would run interpreted around
    every controller's batch and every Event."""

    def __init__(self, store: Store, later: bool) -> None:
        self.store = store
        self.later = later
        self.mark = -1  # where its writes begin in _pending; -1: an enclosing batch owns them

    def __enter__(self) -> None:
        store = self.store
        store._lock.acquire()
        if self.later and store._batch_depth:
            return  # inside a batch, which commits them
        self.mark = len(store._pending)
        store._batch_depth += 1

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        store = self.store
        try:
            if self.mark < 0:
                return
            store._batch_depth -= 1
            if store._batch_depth:
                return  # a nested batch: the outermost commits (or rolls back) everything
            if exc_type is not None:
                store._rollback(self.mark)
            elif self.later:
                store._schedule_flush(self.mark)
            else:
                store._flush()
        finally:
            store._lock.release()


def _parse_rv(value: str) -> int:
    if not value:
        return 0
    try:
        rv = int(value)
    except ValueError:
        raise BadRequest(f'invalid resourceVersion "{value}": must be an integer') from None
    if rv < 0:
        raise BadRequest(f'invalid resourceVersion "{value}": must not be negative')
    return rv


def _encode_continue(rv: int, namespace: str, name: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"v": 1, "rv": rv, "start": [namespace, name]})).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        ns, name = data["start"]
        return str(ns), str(name)
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise BadRequest(f'continue key is not valid: "{token}"') from None
