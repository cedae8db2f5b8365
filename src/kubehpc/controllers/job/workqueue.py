"""A de-duplicating, delaying queue of Job keys for the controller's worker."""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable

from kubehpc.store.client import Client, write_batch

log = logging.getLogger(__name__)

Key = tuple[str, str]
# Syncs whose writes share one commit, when the store can batch: up to WRITE_BATCH of them, for
# up to WRITE_BATCH_S. A longer batch costs fewer commits and fewer hand-offs between threads
# (under a burst, 32 syncs a batch cost 2.5 times the context switches of 128); but the embedded
# store holds its lock for a whole batch, so other writers wait for it: the time bound caps that
# wait (docs/performance.md, twenty-second pass).
WRITE_BATCH = 128
WRITE_BATCH_S = 0.02


class WorkQueue:
    """Each key is queued at most once, at the earliest time anyone asked for it.

    The due times are kept in a heap (entries made stale by an earlier due time are skipped
    when they surface), so taking the next key costs O(log n), not a scan of every queued key:
    a controller with thousands of keys queued must not spend its time finding the next one.
    """

    def __init__(self) -> None:
        self._due: dict[Key, float] = {}
        self._heap: list[tuple[float, int, Key]] = []
        self._seq = 0  # keeps the heap from ever comparing keys, and equal due times in order
        # The lock is taken directly and the condition notified only when a getter waits on
        # it: a Condition's enter, exit and notify run interpreted Python, and most keys are
        # added while the worker is busy, not waiting.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0  # getters inside ``_cond.wait``
        self._closed = False

    def add(self, key: Key, delay_s: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay_s)
        with self._lock:
            if key not in self._due or due < self._due[key]:
                self._due[key] = due
                self._seq += 1
                heapq.heappush(self._heap, (due, self._seq, key))
                if self._waiting:
                    self._cond.notify()

    def get(self, timeout_s: float) -> Key | None:
        """The next due key, or None after ``timeout_s`` (or once closed)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                heap = self._heap
                while heap and self._due.get(heap[0][2]) != heap[0][0]:
                    heapq.heappop(heap)  # stale: the key was taken, or moved earlier
                if heap:
                    due, _, key = heap[0]
                    if due <= now:
                        heapq.heappop(heap)
                        del self._due[key]
                        return key
                    wait = min(due, deadline) - now
                else:
                    wait = deadline - now
                if wait <= 0:
                    return None
                self._waiting += 1
                try:
                    self._cond.wait(wait)
                finally:
                    self._waiting -= 1
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._lock:
            return len(self._due)


def work_in_one_batch(
    client: Client,
    queue: WorkQueue,
    first: Key,
    work: Callable[[Key], None],
    on_failure: Callable[[list[Key]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run ``work`` on ``first`` and the other keys due now (up to ``WRITE_BATCH``, for up to
    ``WRITE_BATCH_S`` of ``clock``) inside one write batch: a burst of objects costs one commit
    per batch instead of one per write. If the commit fails it takes the batch's writes with
    it, so every key of the batch is queued again (and ``on_failure`` told which, to drop what
    the worker learnt from writes that are gone)."""
    done: list[Key] = []
    try:
        with write_batch(client):
            until = clock() + WRITE_BATCH_S
            key: Key | None = first
            while key is not None:
                done.append(key)
                work(key)
                more = len(done) < WRITE_BATCH and clock() < until
                key = queue.get(0.0) if more else None
    except Exception:
        log.exception("committing the writes of %d syncs failed; retrying", len(done))
        if on_failure is not None:
            on_failure(done)
        for key in done:
            queue.add(key, 1.0)


def work_until_stopped(
    stop: threading.Event,
    client: Client,
    queue: WorkQueue,
    enqueue_all: Callable[[], None],
    resync_seconds: float,
    work: Callable[[Key], None],
    on_failure: Callable[[list[Key]], None] | None = None,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """A controller's worker: take due keys in write batches until ``stop``; every
    ``resync_seconds`` queue every object again (as informers' resync does), so a missed or
    failed event is only ever late, never lost. Between batches it yields (``pause(0)``)."""
    next_resync = 0.0
    while not stop.is_set():
        if time.monotonic() >= next_resync:
            enqueue_all()
            next_resync = time.monotonic() + resync_seconds
        key = queue.get(timeout_s=0.5)
        if key is not None:
            work_in_one_batch(client, queue, key, work, on_failure)
            # Let a writer that waited for the store through the batch in before the next one:
            # woken when the lock was released, it still needs the interpreter, and without
            # this yield this thread would take the lock again first (docs/performance.md,
            # twenty-second pass: the median wait of such a writer 44 -> 34 ms under a burst).
            pause(0.0)
