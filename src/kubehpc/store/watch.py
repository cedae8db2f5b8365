"""Watches on the embedded store.

The store hands every committed change to each watch of that resource (``offer``), under its
write lock and in resourceVersion order. A watch filters the change against its namespace and
selectors and queues it; decoding into a fresh dict happens on the consumer's side, so the
writer only pays an append per watcher.

Consumers iterate synchronously (blocking, from threads) or with ``async for``: the async side
is woken with ``loop.call_soon_threadsafe``, so an HTTP server holds no thread per watcher.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import orjson

from kubehpc.store.client import WatchEvent
from kubehpc.store.records import ADDED, DELETED, MODIFIED, Change, Obj, Record
from kubehpc.store.selectors import FieldSelector, LabelSelector

BOOKMARK = "BOOKMARK"

# (type, record or None for a bookmark, resourceVersion)
_Item = tuple[str, Record | None, int]


class WatchFilter:
    """Which changes of one resource a watch wants, and as which event type."""

    def __init__(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> None:
        self.namespace = namespace or None
        self.labels = labels
        self.fields = fields
        self._selective = not labels.empty or not fields.empty

    def matches(self, namespace: str, record: Record) -> bool:
        if self.namespace is not None and namespace != self.namespace:
            return False
        if not self._selective:
            return True
        obj = record.obj
        return self.labels.matches_object(obj) and self.fields.matches(obj)

    def event_type(self, change: Change) -> str | None:
        """The event this watch sees for ``change``, None when it sees none."""
        if self.namespace is not None and change.namespace != self.namespace:
            return None
        if not self._selective:
            return change.type
        now = self.matches(change.namespace, change.record)
        if change.type != MODIFIED:
            return change.type if now else None
        before = change.prev is not None and self.matches(change.namespace, change.prev)
        if before and now:
            return MODIFIED
        if before:
            return DELETED  # left the selection
        if now:
            return ADDED  # entered the selection
        return None


class StoreWatch:
    """A watch on one resource of the embedded store (implements ``client.Watch``)."""

    def __init__(
        self,
        flt: WatchFilter,
        decode: Callable[[bytes], Obj],
        bookmark: Callable[[int], Obj] | None,
        bookmark_interval: float,
        on_stop: Callable[[StoreWatch], None],
        raw_ok: bool = False,
        max_queue: int = 100_000,
        shared: bool = False,
    ) -> None:
        self._raw_ok = raw_ok
        self._shared = shared
        """Events carry the store's shared decoded object (a read-only watch), not a copy."""
        self._max_queue = max_queue
        self.filter = flt
        self._decode = decode
        self._bookmark = bookmark
        self._interval = bookmark_interval
        self._on_stop = on_stop
        self._items: deque[_Item] = deque()
        # Items the consumer took from _items in one go and has not yielded yet (its side only).
        self._taken: deque[_Item] = deque()
        self._mutex = threading.Lock()
        # The consumer's doorbell: held (locked) except between a producer's ring and the
        # consumer's answer. A Condition's wait and notify run interpreted Python (a fresh lock
        # per wait, a deque of waiters) and cost ~5 % of the control plane's CPU over its dozens
        # of watches; one lock rung by its one consumer's producers is two C calls.
        self._bell = threading.Lock()
        self._bell.acquire()
        self._progress = 0
        self._stopped = False
        # Whether the consumer thread waits for the bell: a producer rings only then, once per
        # wait (most puts find the consumer busy, and a second ring would find the bell let go).
        self._waiting = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_ready: asyncio.Event | None = None
        self._wake_pending = False

    # --- producer side (store, under its lock) -------------------------------------------

    def start_at(self, rv: int) -> None:
        self._progress = rv

    def push(self, type_: str, record: Record, rv: int) -> None:
        self._put([(type_, record, rv)], rv)

    def offer(self, change: Change) -> None:
        self.offer_all((change,))

    def offer_all(self, changes: Sequence[Change]) -> None:
        """``changes`` (one commit's, of this watch's resource, in order) with one lock and one
        wake-up for all of them: a batch of writes costs each watcher one hand-over."""
        if not changes:
            return
        items = [
            (type_, change.record, change.rv)
            for change in changes
            if (type_ := self.filter.event_type(change)) is not None
        ]
        self._put(items, changes[-1].rv)

    def _put(self, items: Sequence[_Item], progress: int) -> None:
        with self._mutex:
            if self._stopped:
                return
            if items and len(self._items) + len(items) > self._max_queue:
                # A consumer this far behind (or gone without stop()) is cut off, as the API
                # server closes slow watches: the stream ends and the client re-watches from
                # the last resourceVersion it saw. The store drops us after this flush.
                self._stopped = True
                self._items.clear()
                self._ring()
            elif items:
                self._items.extend(items)
                self._ring()
            self._progress = progress
        if items:
            self._wake_async()

    def _ring(self) -> None:
        """Wake the consumer if it waits (called with ``_mutex`` held): it rings once per
        wait, so the bell is never let go twice."""
        if self._waiting:
            self._waiting = False
            self._bell.release()

    def _wake_async(self) -> None:
        loop = self._loop
        if loop is None or self._wake_pending:
            return
        self._wake_pending = True
        try:
            loop.call_soon_threadsafe(self._set_ready)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stopped = True

    def _set_ready(self) -> None:
        self._wake_pending = False
        if self._async_ready is not None:
            self._async_ready.set()

    # --- consumer side -------------------------------------------------------------------

    def stop(self) -> None:
        with self._mutex:
            if self._stopped:
                return
            self._stopped = True
            self._ring()
        self._wake_async()
        self._on_stop(self)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _take(self) -> _Item | None:
        """Next item without waiting (called with ``_mutex`` held)."""
        if self._taken:
            return self._taken.popleft()
        if self._items:
            return self._items.popleft()
        return None

    def _to_event(self, item: _Item) -> WatchEvent:
        type_, record, rv = item
        if record is None:
            assert self._bookmark is not None
            return WatchEvent(BOOKMARK, self._bookmark(rv))
        if self._shared:
            return WatchEvent(type_, record.obj)
        return WatchEvent(type_, self._decode(record.raw))

    def _bookmark_item(self) -> _Item | None:
        if self._bookmark is None:
            return None
        return (BOOKMARK, None, self._progress)

    def _iter_items(self) -> Iterator[_Item]:
        while True:
            taken = self._taken
            while taken:
                if self._stopped:  # stop() from another thread ends the stream at once
                    return
                yield taken.popleft()
            bookmark = None
            mutex = self._mutex
            mutex.acquire()
            try:
                if not self._items and not self._stopped:
                    self._waiting = True
                    mutex.release()
                    rung = False
                    timeout = self._interval if self._bookmark is not None else -1
                    try:
                        rung = self._bell.acquire(timeout=timeout)
                    finally:
                        mutex.acquire()
                        if self._waiting:
                            self._waiting = False  # timed out, and nobody rang
                        elif not rung:
                            # Rung after the wait timed out: the bell was let go under the
                            # mutex, which this thread now holds; take it back at once.
                            self._bell.acquire()
                if self._stopped:
                    return
                if self._items:
                    # Everything queued at once, under one hold of the lock: a commit hands a
                    # watch its changes together. They wait in _taken, not in this generator,
                    # so a new iterator over the watch goes on where this one stopped.
                    self._taken, self._items = self._items, self._taken
                else:
                    bookmark = self._bookmark_item()
            finally:
                mutex.release()
            if bookmark is not None:
                yield bookmark

    def __iter__(self) -> Iterator[WatchEvent]:
        for item in self._iter_items():
            yield self._to_event(item)

    def raw_items(self) -> Iterator[tuple[str, bytes]]:
        """(type, JSON bytes of the object): the stored bytes as they are when the watch is
        in the storage version (no decoding at all), for the HTTP server's watch stream."""
        for item in self._iter_items():
            type_, record, _ = item
            if record is not None and self._raw_ok:
                yield type_, record.raw
            else:
                yield type_, orjson.dumps(self._to_event(item).object)

    # The async side lives in awatch.py: mypyc, which compiles this module, compiles no
    # async generators.
    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        from kubehpc.store import awatch

        return awatch.events(self)

    def araw_items(self) -> AsyncIterator[tuple[str, bytes]]:
        """``raw_items`` for asyncio code."""
        from kubehpc.store import awatch

        return awatch.raw_items(self)

    def __enter__(self) -> StoreWatch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
