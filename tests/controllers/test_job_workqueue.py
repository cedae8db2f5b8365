"""The controllers' work queue: each key once, at the earliest due time asked for, in due order."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import cast

from kubehpc.controllers.job.workqueue import (
    WRITE_BATCH,
    WRITE_BATCH_S,
    WorkQueue,
    work_in_one_batch,
    work_until_stopped,
)
from kubehpc.store.client import Client


def drain(q: WorkQueue) -> list[tuple[str, str]]:
    out = []
    while (key := q.get(0.0)) is not None:
        out.append(key)
    return out


def test_keys_come_out_in_the_order_they_became_due() -> None:
    q = WorkQueue()
    for name in ("c", "a", "b"):
        q.add(("ns", name))
    assert drain(q) == [("ns", "c"), ("ns", "a"), ("ns", "b")]


def test_a_key_added_twice_comes_out_once() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.add(("ns", "a"))
    assert drain(q) == [("ns", "a")]
    assert len(q) == 0


def test_an_earlier_due_time_wins_and_the_later_one_is_dropped() -> None:
    q = WorkQueue()
    q.add(("ns", "a"), 60.0)
    q.add(("ns", "a"), 0.0)
    assert drain(q) == [("ns", "a")]
    q.add(("ns", "a"), 0.0)  # queued again after being taken: once more
    assert drain(q) == [("ns", "a")]


def test_a_later_due_time_does_not_delay_a_queued_key() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.add(("ns", "a"), 60.0)
    assert drain(q) == [("ns", "a")]


def test_a_key_not_yet_due_waits() -> None:
    q = WorkQueue()
    q.add(("ns", "later"), 0.05)
    assert q.get(0.0) is None
    started = time.monotonic()
    assert q.get(5.0) == ("ns", "later")
    assert time.monotonic() - started < 4.0


def test_many_keys_each_come_out_exactly_once() -> None:
    q = WorkQueue()
    keys = [("ns", f"k{i}") for i in range(2000)]
    for key in keys:
        q.add(key)
    for key in keys[::3]:
        q.add(key)  # re-added while queued: no duplicate
    assert sorted(drain(q)) == sorted(keys)


def test_a_closed_queue_returns_nothing() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.close()
    assert q.get(1.0) is None


def test_a_waiting_worker_wakes_as_soon_as_a_key_is_added() -> None:
    q = WorkQueue()
    got: list[tuple[str, str] | None] = []
    worker = threading.Thread(target=lambda: got.append(q.get(30.0)))
    worker.start()
    time.sleep(0.1)  # the worker is waiting by now
    added = time.monotonic()
    q.add(("ns", "a"))
    worker.join(10.0)
    assert got == [("ns", "a")]
    assert time.monotonic() - added < 5.0  # woken, not timed out


# --- write batches ----------------------------------------------------------------------------


class CountingBatches:
    """A client that batches: counts the batches opened and which keys each one covered."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, str]]] = []

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self.batches.append([])
        yield


def stopped_clock() -> float:  # a clock for batches bounded by their size alone
    return 0.0


def queued(n: int) -> WorkQueue:
    q = WorkQueue()
    for i in range(n):
        q.add(("ns", f"k{i}"))
    return q


def test_a_batch_takes_the_due_keys_up_to_its_size() -> None:
    client = CountingBatches()
    q = queued(WRITE_BATCH + 10)
    first = q.get(0.0)
    assert first is not None
    work_in_one_batch(
        cast(Client, client), q, first, lambda key: client.batches[-1].append(key), clock=stopped_clock
    )
    assert len(client.batches) == 1
    assert len(client.batches[0]) == WRITE_BATCH
    assert len(q) == 10


def test_a_batch_stops_taking_keys_once_it_has_run_its_time() -> None:
    # Each sync takes a little over a third of the batch's time on the clock: after the third
    # the time is up, and the rest wait for the next batch (the store's lock is not held
    # for them).
    client = CountingBatches()
    now = [100.0]

    def work(key: tuple[str, str]) -> None:
        client.batches[-1].append(key)
        now[0] += WRITE_BATCH_S / 3 + 1e-9

    q = queued(10)
    first = q.get(0.0)
    assert first is not None
    work_in_one_batch(cast(Client, client), q, first, work, clock=lambda: now[0])
    assert len(client.batches[0]) == 3
    assert len(q) == 7


def test_keys_left_by_a_full_batch_go_into_the_next_one() -> None:
    client = CountingBatches()
    q = queued(2 * WRITE_BATCH)
    while (first := q.get(0.0)) is not None:
        work_in_one_batch(
            cast(Client, client), q, first, lambda key: client.batches[-1].append(key), clock=stopped_clock
        )
    assert [len(b) for b in client.batches] == [WRITE_BATCH, WRITE_BATCH]
    assert sorted(k for b in client.batches for k in b) == sorted(
        ("ns", f"k{i}") for i in range(2 * WRITE_BATCH)
    )


def test_the_worker_yields_between_batches_so_waiting_writers_get_the_store() -> None:
    client = CountingBatches()
    q = queued(WRITE_BATCH + 1)  # two batches
    stop = threading.Event()
    pauses: list[tuple[float, int]] = []

    def work(key: tuple[str, str]) -> None:
        client.batches[-1].append(key)
        if len(q) == 0:
            stop.set()

    work_until_stopped(
        stop,
        cast(Client, client),
        q,
        enqueue_all=lambda: None,
        resync_seconds=3600.0,
        work=work,
        pause=lambda seconds: pauses.append((seconds, len(client.batches))),
    )
    assert sum(len(b) for b in client.batches) == WRITE_BATCH + 1
    # A yield after each batch, before the next (two batches, more if a slow machine ran
    # past a batch's time).
    assert pauses == [(0.0, n) for n in range(1, len(client.batches) + 1)]
